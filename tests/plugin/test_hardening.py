"""Hostile subjects: a corpus of path-escape attempts, and a canary secret passed by inherit."""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from pytest_skill_eval.evidence import verify_group
from tests.support.files import read_json
from tests.support.processes import wait_for
from tests.support.roots import body_group, make_root
from tests.support.runs import results, run, skill_eval_args

pytestmark = pytest.mark.pi

CANARY = "OUTSIDE-SECRET-CANARY-7f3a"
UP = "../" * 8  # from <root>/.skill-eval/runs/<id>/groups/<g>/<variant>/workspace to tmp_path


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _attempts(outside: Path) -> list[dict[str, Any]]:
    secret = outside / "secret.txt"
    edit = [{"oldText": CANARY[:14], "newText": "owned"}]  # a part only: the whole never appears
    return [
        # reads outside every allowed root
        _call("read", path=f"{UP}outside/secret.txt"),
        _call("read", path=str(secret)),
        _call("read", path=f"@{secret}"),
        _call("read", path=f"@{UP}outside/secret.txt"),
        _call("read", path="~/.bashrc"),
        _call("read", path="/etc/hostname"),
        _call("read", path="escape/secret.txt"),
        _call("read", path="leak.txt"),
        _call("read", path="escape/../escape/secret.txt"),
        _call("read", path=f"{{{{workspace}}}}/{UP}outside/secret.txt"),
        _call("read", path="./escape/secret.txt"),
        # writes outside the workspace, directly and through planted links
        _call("write", path=f"{UP}outside/new.txt", content="x"),
        _call("write", path=str(outside / "new.txt"), content="x"),
        _call("write", path=f"@{outside}/new2.txt", content="x"),
        _call("write", path="escape/new.txt", content="x"),
        _call("write", path="leak.txt", content="x"),
        _call("write", path="dangling", content="x"),
        _call("write", path="~/new.txt", content="x"),
        _call("write", path="/tmp/skill-eval-escape-attempt.txt", content="x"),
        _call("write", path="escape/sub/new.txt", content="x"),
        _call("write", path="{{skill:0}}/SKILL.md", content="x"),
        # edits outside the workspace
        _call("edit", path="leak.txt", edits=edit),
        _call("edit", path="escape/secret.txt", edits=edit),
        _call("edit", path=str(secret), edits=edit),
        _call("edit", path=f"{UP}outside/secret.txt", edits=edit),
        _call("edit", path="{{skill:0}}/SKILL.md", edits=[{"oldText": "yes", "newText": "no"}]),
        # tools that were never declared
        _call("bash", command=f"cat {secret}"),
        _call("ls", path="/"),
        _call("grep", pattern="CANARY", path="/"),
    ]


def test_no_path_escape_attempt_succeeds(pytester: pytest.Pytester, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(CANARY)
    plant = [
        {"id": "plant-dir", "argv": ["ln", "-s", str(outside), "escape"]},
        {"id": "plant-file", "argv": ["ln", "-s", str(outside / "secret.txt"), "leak.txt"]},
        {"id": "plant-dangling", "argv": ["ln", "-s", str(outside / "nowhere.txt"), "dangling"]},
    ]
    attempts = _attempts(outside)
    assert len(attempts) >= 25
    group = body_group(
        "escape", tools=["read", "write", "edit", "run_command"], commands=plant, expectations=[]
    )
    script: list[dict[str, Any]] = [
        {"response": {"tool_calls": [_call("run_command", command=c["id"]) for c in plant]}},
        {"response": {"tool_calls": attempts}},
        {"response": {"text": "done"}},
    ]
    root = make_root(
        tmp_path / "root",
        [group],
        {"escape/baseline": [{"response": {"text": "done"}}], "escape/candidate": script},
    )
    result = run(pytester, root)
    assert result.ret == 0, result.stdout.str()
    variant = results(root)[-1] / "groups" / "escape" / "candidate"
    record = read_json(variant / "run.json")
    assert record["state"] == "complete"
    activity = record["turns"][0]["toolActivity"]
    planted = activity[: len(plant)]
    assert all(a["isError"] is False for a in planted), planted
    tried = activity[len(plant) :]
    assert len(tried) == len(attempts)
    escaped = [a for a in tried if not (a["completed"] and a["isError"])]
    assert escaped == [], escaped
    # Nothing outside changed, nothing outside was read into the conversation.
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == CANARY
    assert not Path("/tmp/skill-eval-escape-attempt.txt").exists()
    for path in variant.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert CANARY.encode() not in path.read_bytes(), path
    skill = variant / "resources" / "skills" / "0" / "answer-writer" / "SKILL.md"
    assert "yes" in skill.read_text()


def test_an_inherited_canary_reaches_the_subject_but_never_the_evidence(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = "sk-canary-" + os.urandom(8).hex()
    digest = hashlib.sha256(canary.encode()).hexdigest()
    monkeypatch.setenv("ACME_API_TOKEN", canary)
    show = [
        "python3",
        "-c",
        "import hashlib, os; "
        "print(hashlib.sha256(os.environ['ACME_API_TOKEN'].encode()).hexdigest())",
    ]
    runtime = {
        "host": "pi",
        "session": False,
        "extensions": [],
        "environment": {"literal": {"ACME_REGION": "eu"}, "inherit": ["ACME_API_TOKEN"]},
    }
    group = body_group(
        "canary",
        tools=["read", "write", "edit", "run_command"],
        commands=[{"id": "show-digest", "argv": show}],
        runtime=runtime,
        expectations=[],
    )
    script: list[dict[str, Any]] = [
        {"response": {"tool_calls": [_call("run_command", command="show-digest")]}},
        {"response": {"text": "done"}},
    ]
    root = make_root(
        tmp_path / "root", [group], {"canary/baseline": script, "canary/candidate": script}
    )
    result = run(pytester, root)
    assert result.ret == 0, result.stdout.str()
    result_dir = results(root)[-1]
    record = read_json(result_dir / "groups" / "canary" / "candidate" / "run.json")
    assert "ACME_API_TOKEN" in record["environment"]["names"]
    assert record["environment"]["inherit"] == ["ACME_API_TOKEN"]
    transcript = (result_dir / "groups" / "canary" / "candidate" / "transcript.json").read_text()
    assert digest in transcript, "the subject received the inherited value"
    for path in result_dir.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert canary.encode() not in path.read_bytes(), path


def _pi_in(workspace_parent: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cwd"]):
        try:
            cwd = process.info["cwd"]
        except psutil.Error:
            continue
        if cwd and Path(cwd).is_relative_to(workspace_parent):
            found.append(process)
    return found


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_killing_pi_at_a_random_point_loses_no_evidence_and_leaves_no_process(
    pytester: pytest.Pytester, tmp_path: Path, seed: int
) -> None:
    delay = random.Random(seed).uniform(0.2, 3.0)
    step = {
        "response": {
            "tool_calls": [_call("read", path="README.md")],
            "latency_ms": 300,
        }
    }
    script: list[dict[str, Any]] = [*[step] * 8, {"response": {"text": "done"}}]
    root = make_root(
        tmp_path / "root",
        [body_group("victim", expectations=[])],
        {"victim/baseline": [{"response": {"text": "done"}}], "victim/candidate": script},
    )
    command = [
        sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(root),
        *skill_eval_args(root),
    ]  # fmt: skip
    with subprocess.Popen(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    ) as run_:
        runs = root / ".skill-eval" / "runs"
        deadline = time.monotonic() + 60
        victims: list[psutil.Process] = []
        while time.monotonic() < deadline and not victims:
            victims = (
                [p for p in _pi_in(runs) if "candidate" in str(p.info["cwd"])]
                if runs.is_dir()
                else []
            )
            time.sleep(0.05)
        assert victims, "the candidate's Pi never started"
        time.sleep(delay)
        for victim in victims:
            with contextlib.suppress(psutil.Error):
                victim.kill()
        output, _ = run_.communicate(timeout=120)
    assert run_.returncode in (0, 1), output.decode(errors="replace")
    (result_dir,) = results(root)
    group = result_dir / "groups" / "victim"
    baseline = read_json(group / "baseline" / "run.json")
    candidate = read_json(group / "candidate" / "run.json")
    assert baseline["state"] == "complete"
    assert candidate["state"] in ("infrastructure-failed", "complete")
    if candidate["state"] == "infrastructure-failed":
        assert candidate["process"]["signal"] == "SIGKILL" or candidate["process"]["exitCode"]
    assert read_json(result_dir / "summary.json")["groups"][0]["id"] == "victim"
    assert verify_group(group) == []
    assert _pi_in(runs) == [], "no process of the run is left behind"


def test_ctrl_c_under_xdist_keeps_finished_runs_and_cancels_the_rest(tmp_path: Path) -> None:
    slow = [{"response": {"text": "done", "latency_ms": 4000}}]
    groups = [body_group(f"g{i}", expectations=[]) for i in range(6)]
    scripts = {f"g{i}/{v}": slow for i in range(6) for v in ("baseline", "candidate")}
    root = make_root(tmp_path / "root", groups, scripts)
    # A base temporary directory of its own: an xdist session otherwise numbers one under
    # pytest's shared root and deletes the older ones there as it ends, which under a loaded
    # test run outlasted the wait below.
    command = [
        sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(root),
        f"--basetemp={tmp_path / 'basetemp'}", *skill_eval_args(root, "-n", "2"),
    ]  # fmt: skip
    # A new session, like a terminal's foreground job: Ctrl-C reaches every process in it.
    with subprocess.Popen(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    ) as session:
        runs = root / ".skill-eval" / "runs"
        wait_for(lambda: list(runs.glob("*/groups/*/baseline/run.json")), "a baseline on record")
        time.sleep(1.0)  # the first baselines are persisted; their candidates are running
        os.killpg(session.pid, signal.SIGINT)
        output, _ = session.communicate(timeout=120)
    text = output.decode(errors="replace")
    assert session.returncode != 0, text
    (result_dir,) = results(root)
    summary = read_json(result_dir / "summary.json")
    assert summary["state"] == "cancelled"
    assert sorted(g["id"] for g in summary["groups"]) == [f"g{i}" for i in range(6)]
    finished = 0
    for group in summary["groups"]:
        group_dir = result_dir / "groups" / group["id"]
        assert verify_group(group_dir) == []
        for variant in ("baseline", "candidate"):
            record = read_json(group_dir / variant / "run.json")
            assert record["state"] in ("complete", "cancelled"), record["state"]
            finished += record["state"] == "complete"
    assert 1 <= finished < 12
    assert _pi_in(runs) == [], "no Pi is left behind"
