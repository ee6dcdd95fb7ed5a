"""`--skill-eval-resume RESULT`: an interrupted result is completed into a new one that carries
the finished groups over byte for byte and runs only the rest (subjects on the fastest host)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_skill_eval.evidence.seal import sealed_root, verify_result
from pytest_skill_eval.evidence.store import sha256_file
from tests.support.files import read_json
from tests.support.processes import wait_for
from tests.support.roots import (
    answers_root,
    body_group,
    fast_dir,
    on_fast_host,
    write_answer,
    write_script,
)
from tests.support.runs import results, run_detached, skill_eval_args

pytestmark = [pytest.mark.pi, pytest.mark.codex]

OUTAGE = [{"response": {"error": {"status": 503, "message": "scripted outage"}}}]


def _tree(directory: Path) -> dict[str, bytes]:
    """Every entry below `directory` and its bytes (a link: its target)."""
    found = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if path.is_symlink():
            found[rel] = b"link:" + os.fsencode(os.readlink(path))
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


def _verify(result: Path) -> None:
    verified = subprocess.run(
        [str(Path(sys.executable).parent / "skill-eval"), "verify", str(result)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _assert_resumed(old: Path, new: Path, carried: str, rerun: str) -> None:
    """`new` verifies, holds `carried` byte for byte as `old` has it, and ran `rerun` anew."""
    assert verify_result(new) == []
    _verify(new)
    assert _tree(new / "groups" / carried) == _tree(old / "groups" / carried)
    resumed = read_json(new / "invocation.json")["resumedFrom"]
    manifest = sha256_file(old / "groups" / carried / "manifest.json")
    assert resumed["id"] == old.name
    assert resumed["groups"] == [{"group": carried, "manifest": manifest}]
    record = read_json(new / "groups" / rerun / "group.json")
    assert record["variants"] == {"baseline": "complete", "candidate": "complete"}
    summary = read_json(new / "summary.json")
    assert sorted(g["id"] for g in summary["groups"]) == sorted(
        name.split("@")[0] for name in (carried, rerun)
    )


def test_a_result_with_an_infrastructure_failure_is_completed_into_a_new_verified_result(
    tmp_path: Path,
) -> None:
    root = answers_root(
        tmp_path / "root",
        {
            "steady/baseline": "yes",
            "steady/candidate": "yes",
            "outage/baseline": OUTAGE,
            "outage/candidate": "yes",
        },
    )
    run_detached(root)
    (old,) = results(root)
    assert read_json(old / "groups" / fast_dir("outage") / "group.json")["variants"][
        "baseline"
    ] == ("infrastructure-failed")
    before = _tree(old)
    root_hash = sealed_root(old)
    assert root_hash is not None

    write_script(root / "scripts" / "outage" / "baseline.yaml", write_answer("yes"))
    junit = tmp_path / "junit.xml"
    done = run_detached(root, "--skill-eval-resume", old.name, f"--junitxml={junit}")
    assert "Traceback" not in done.stdout + done.stderr
    new = next(r for r in results(root) if r != old)
    _assert_resumed(old, new, fast_dir("steady"), fast_dir("outage"))
    assert read_json(new / "invocation.json")["resumedFrom"]["root"] == root_hash
    assert f"resumed from {old.name} (seal sha256:{root_hash})" in done.stdout
    assert f"carried over from {old.name}: not run again" in done.stdout
    # Each carried variant's JUnit case names its source; the re-run ones do not.
    assert junit.read_text(encoding="utf-8").count(f'name="resumed-from" value="{old.name}"') == 2
    # The result it completes is never written.
    assert _tree(old) == before
    assert verify_result(old) == []


def test_a_killed_run_is_completed_into_a_new_verified_result(tmp_path: Path) -> None:
    slow = [{"response": {**write_answer("yes")[0]["response"], "latency_ms": 600_000}}]
    root = answers_root(
        tmp_path / "root",
        {
            "first/baseline": "yes",
            "first/candidate": "yes",
            "slow/baseline": slow,
            "slow/candidate": "yes",
        },
    )
    args = [sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(root)]
    args += ["-p", "no:randomly", *skill_eval_args(root)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    homes = tmp_path / "homes"  # where the run makes its subjects' isolated homes
    homes.mkdir()
    env["TMPDIR"] = str(homes)
    child = subprocess.Popen(
        args, cwd=root, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    runs = root / ".skill-eval" / "runs"
    try:
        # Killed once the first group is finished and the slow one has started (its host may
        # have been pre-started before the first group was on record: both are waited for).
        while not (
            list(runs.glob(f"*/groups/{fast_dir('first')}/manifest.json"))
            and list(runs.glob(f"*/groups/{fast_dir('slow')}/baseline/events.jsonl"))
        ):
            assert child.poll() is None, "the run ended before it could be interrupted"
            time.sleep(0.2)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    # Neither the running baseline's home nor the pre-started candidate's (made, perhaps still
    # waiting for its start-up slot) outlives the killed run: their guardians delete them.
    wait_for(lambda: not list(homes.glob("skill-eval-*")), "the guardians to delete the homes")
    (old,) = results(root)
    assert not (old / "seal.json").exists()
    assert (old / "groups" / fast_dir("first") / "manifest.json").is_file()
    assert not (old / "groups" / fast_dir("slow") / "manifest.json").exists()
    before = _tree(old)

    write_script(root / "scripts" / "slow" / "baseline.yaml", write_answer("yes"))
    done = run_detached(root, "--skill-eval-resume", "latest")
    assert "Traceback" not in done.stdout + done.stderr
    new = next(r for r in results(root) if r != old)
    _assert_resumed(old, new, fast_dir("first"), fast_dir("slow"))
    assert read_json(new / "invocation.json")["resumedFrom"]["root"] is None
    assert f"resumed from {old.name} (never sealed)" in done.stdout
    assert _tree(old) == before


def test_resuming_what_is_not_a_result_is_one_usage_line(tmp_path: Path) -> None:
    root = answers_root(tmp_path / "root", {"steady/baseline": "yes", "steady/candidate": "yes"})
    done = run_detached(root, "--skill-eval-resume", "20990101000000-00000000")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if "--skill-eval-resume" in line]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ERROR: --skill-eval-resume 20990101000000-00000000: not a result")


def _refusal(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if "--skill-eval-resume" in line]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_a_changed_definition_or_evidence_that_does_not_verify_is_refused(
    tmp_path: Path,
) -> None:
    root = answers_root(tmp_path / "root", {"steady/baseline": "yes", "steady/candidate": "yes"})
    run_detached(root)
    (old,) = results(root)
    runs = root / ".skill-eval" / "runs"
    definition = root / "groups" / "steady.json"
    original = definition.read_text(encoding="utf-8")

    changed = body_group("steady", **on_fast_host())
    changed["input"]["prompt"] = "Write the answer file, please."
    definition.write_text(json.dumps(changed, indent=2), encoding="utf-8")
    line = _refusal(run_detached(root, "--skill-eval-resume", old.name))
    assert line == (
        f"ERROR: --skill-eval-resume: group steady's definition is not the one {old} ran; a "
        "resumed result holds one invocation's groups: run without --skill-eval-resume"
    )

    definition.write_text(original, encoding="utf-8")
    final = old / "groups" / fast_dir("steady") / "baseline" / "final.md"
    final.write_text("tampered\n", encoding="utf-8")
    line = _refusal(run_detached(root, "--skill-eval-resume", "latest"))
    assert line.startswith(f"ERROR: --skill-eval-resume: {old} does not match its seal (changed: ")
    assert str(final) in line
    # Nothing is left of the refused invocations.
    assert sorted(p.name for p in runs.iterdir()) == [old.name]


def test_a_carried_group_after_a_re_run_one_on_pi_is_never_touched_by_a_pre_start(
    tmp_path: Path,
) -> None:
    # On Pi, the group run again comes just before the carried one: while its candidate waits on
    # the model, the next group's first variant would be pre-started; a carried group is not.
    slow = write_answer("yes")
    slow[0]["response"]["latency_ms"] = 1500
    root = answers_root(
        tmp_path / "root",
        {
            "outage/baseline": OUTAGE,
            "outage/candidate": slow,
            "steady/baseline": "yes",
            "steady/candidate": "yes",
        },
        host="pi",
    )
    run_detached(root, "-p", "no:randomly")
    (old,) = results(root)
    write_script(root / "scripts" / "outage" / "baseline.yaml", write_answer("yes"))
    done = run_detached(root, "-p", "no:randomly", "--skill-eval-resume", old.name)
    assert done.returncode == 0, done.stdout + done.stderr
    new = next(r for r in results(root) if r != old)
    _assert_resumed(old, new, "steady", "outage")
