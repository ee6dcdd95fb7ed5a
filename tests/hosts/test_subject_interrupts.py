"""Interrupted subjects end to end: Pi killed mid-turn, and Ctrl-C to pytest mid-suite."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from pytest_skill_eval.evidence import verify_group
from tests.support.files import read_json, write
from tests.support.processes import events_containing, pi_processes, wait_for
from tests.support.roots import Group, build, skill, variant
from tests.support.runs import model_requests, popen, reaped, result_dir, skill_eval_args

pytestmark = pytest.mark.pi

SLOW = 60_000  # ms the scripted model waits before answering: the subject is interrupted first
WAIT_S = 120.0


def _working_in(workspace: Path) -> list[psutil.Process]:
    """The live processes whose working directory is `workspace` itself; one that ends while
    they are listed (its pid possibly taken by another already) is left out."""
    found = []
    for process in pi_processes(workspace):
        with contextlib.suppress(psutil.Error):
            if process.cwd() == str(workspace):
                found.append(process)
    return found


def _variant_dir(root: Path, group: str, name: str) -> Path | None:
    runs = root / ".skill-eval" / "runs"
    found = sorted(runs.glob(f"*/groups/{group}/{name}")) if runs.is_dir() else []
    return found[0] if found else None


def _waiting_for_model(root: Path, group: str, name: str, turn_starts: int) -> Path | None:
    """The variant directory once its Pi has started `turn_starts` model turns."""
    found = _variant_dir(root, group, name)
    if found is None or events_containing(found / "events.jsonl", "turn_start") < turn_starts:
        return None
    return found


def _talking_to_model(process: psutil.Process) -> bool:
    """Whether the process holds an open loopback connection (a model request in flight)."""
    try:
        connections = process.net_connections(kind="tcp4")
    except psutil.Error:
        return False
    return any(
        c.status == psutil.CONN_ESTABLISHED and c.raddr and c.raddr.ip == "127.0.0.1"
        for c in connections
    )


def test_killing_pi_mid_turn_is_infrastructure_failed_with_the_partial_turn_kept(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="killed",
        turns=["Read the notes.", "This turn is never sent."],
        tools=["read"],
        candidate=variant([declared], 0),
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
                {"text": "Too late.", "latency_ms": SLOW},
            ]
        },
    )
    suite = build(root, [group])
    with reaped(
        popen(pytester, skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite))
    ) as child:
        # The second model turn has started: the read is done, the model is "thinking".
        variant_dir = wait_for(
            lambda: _waiting_for_model(root, "killed", "candidate", 2), "the second model turn"
        )
        workspace = (variant_dir / "workspace").resolve()
        subjects = wait_for(lambda: _working_in(workspace), "the Pi process")
        assert len(subjects) == 1
        # Kill it while its second model request is open (the first connection was closed).
        wait_for(lambda: _talking_to_model(subjects[0]), "the second model request")
        subjects[0].send_signal(signal.SIGKILL)
        out, _ = child.communicate(timeout=WAIT_S)
    assert child.returncode == 1, out  # an infrastructure failure fails the item

    run = read_json(variant_dir / "run.json")
    assert run["state"] == "infrastructure-failed"
    assert run["process"]["signal"] == "SIGKILL"
    assert run["process"]["exitCode"] is None
    assert run["process"]["settled"] is False
    assert len(run["turns"]) == 1  # turn 2 was never sent
    turn = run["turns"][0]
    assert turn["prompt"] == "Read the notes."
    assert turn["deliveredPrompt"] == "/skill:note-taker Read the notes."
    assert turn["promptAccepted"] is True
    assert turn["settled"] is False
    assert [(a["toolName"], a["completed"], a["isError"]) for a in turn["toolActivity"]] == [
        ("read", True, False)
    ]
    # user prompt, assistant tool call, tool result: all kept in the transcript
    assert turn["transcript"] == {"file": "transcript.json", "start": 0, "end": 3}
    transcript = read_json(variant_dir / "transcript.json")
    assert [m["role"] for m in transcript] == ["user", "assistant", "toolResult"]
    assert turn["successfulReadPaths"] == [str(workspace / "notes.txt")]
    first_request = model_requests(variant_dir)[0]
    assert first_request["index"] == 0
    assert "Read the notes." in json.dumps(first_request["body"]["messages"][-1])
    assert (variant_dir / "events.jsonl").stat().st_size > 0
    assert pi_processes(root) == []


def _quick(group_id: str, declared: str) -> Group:
    return Group(
        id=group_id,
        type="description",
        turns=["Log the change."],
        tools=["read"],
        candidate=variant([declared], 0),
        scripts={"baseline": [{"text": "Logged."}], "candidate": [{"text": "Logged."}]},
    )


def _interrupt_second_group(pytester: pytest.Pytester) -> tuple[int, str, Path]:
    """Run a three-group suite and press Ctrl-C while the second group's first subject runs."""
    root = pytester.path / "root"
    declared = skill(root, "note-taker")
    slow = Group(
        id="second",
        type="description",
        turns=["Log the change.", "And another."],
        tools=["read"],
        candidate=variant([declared], 0),
        scripts={
            "baseline": [{"text": "Logged.", "latency_ms": SLOW}],
            "candidate": [{"text": "Logged."}, {"text": "Again."}],
        },
    )
    suite = build(root, [_quick("first", declared), slow, _quick("third", declared)])
    with reaped(popen(pytester, skill_eval_args(root, "-v", suite=suite))) as child:
        try:
            running = wait_for(
                lambda: _waiting_for_model(root, "second", "baseline", 1), "the second group"
            )
            workspace = (running / "workspace").resolve()
            wait_for(lambda: pi_processes(workspace), "the second group's Pi process")
            child.send_signal(signal.SIGINT)
            out, _ = child.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            out, _ = child.communicate()
            pytest.fail(f"pytest did not stop after Ctrl-C:\n{out!r}")
    assert pi_processes(root) == []  # the running subject was terminated, nothing left over
    return child.returncode, out.decode("utf-8", "replace"), result_dir(root)


def test_ctrl_c_mid_suite_keeps_completed_runs_and_cancels_the_rest(
    pytester: pytest.Pytester,
) -> None:
    returncode, output, result = _interrupt_second_group(pytester)
    assert returncode == pytest.ExitCode.INTERRUPTED, output
    assert "cancelled by Ctrl-C" in output

    summary = read_json(result / "summary.json")
    assert summary["state"] == "cancelled"
    states = {g["id"]: g["state"] for g in summary["groups"]}
    assert states["first"] == "complete"
    assert states["second"] == "cancelled"

    first = result / "groups" / "first"
    assert verify_group(first) == []  # its evidence is intact and complete
    for name in ("baseline", "candidate"):
        assert read_json(first / name / "run.json")["state"] == "complete"

    second = result / "groups" / "second"
    running = read_json(second / "baseline" / "run.json")
    assert running["state"] == "cancelled"
    assert running["process"]["terminationReason"] == "cancelled"
    assert [t["prompt"] for t in running["turns"]] == ["Log the change."]
    assert running["turns"][0]["promptAccepted"] is True
    queued = read_json(second / "candidate" / "run.json")
    assert queued["state"] == "cancelled"
    assert queued["turns"] == []
    assert queued["error"] == {
        "kind": "cancellation",
        "message": "Cancelled before subject execution",
    }
    assert verify_group(second) == []

    # A group that never started is part of "the rest" too (reference §4.10).
    assert states["third"] == "cancelled"
    third = result / "groups" / "third"
    for name in ("baseline", "candidate"):
        never = read_json(third / name / "run.json")
        assert never["state"] == "cancelled"
        assert never["turns"] == []
    assert not (third / "baseline" / "events.jsonl").exists()  # no Pi was started for it
