"""Every run that is not complete says why in `run.json`'s `error`, in one sentence."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.failures import why_incomplete as _why
from pytest_skill_eval.hosts.observation import Observation
from pytest_skill_eval.hosts.process import ProcessOutcome
from tests.support.files import read_json, write
from tests.support.processes import events_containing, pi_processes, wait_for
from tests.support.roots import Group, build, skill, variant
from tests.support.runs import popen, reaped, skill_eval_args

SLOW = 60_000  # ms the scripted model waits: Pi is crashed while it waits


def _why_for(tmp_path: Path, outcome: ProcessOutcome, stderr: bytes = b"") -> str:
    (tmp_path / "stderr.log").write_bytes(stderr)
    error = _why("infrastructure-failed", outcome, False, None, Observation(), tmp_path)
    assert error["kind"] == "infrastructure"
    assert "\n" not in error["message"]
    return error["message"]


def test_a_signal_is_named_with_the_last_line_of_stderr(tmp_path: Path) -> None:
    message = _why_for(
        tmp_path,
        ProcessOutcome(signal="SIGABRT"),
        b"starting\nFATAL ERROR: Reached heap limit\n\n",
    )
    assert message == (
        "Pi was killed by SIGABRT; last line of stderr: FATAL ERROR: Reached heap limit"
    )


def test_the_last_line_of_stderr_is_named_without_its_colours(tmp_path: Path) -> None:
    # Codex's app-server colours its log lines: the message keeps their words only.
    line = b"\x1b[2m2026-12-06T19:11:58Z\x1b[0m \x1b[31mERROR\x1b[0m codex: gone\n"
    message = _why_for(tmp_path, ProcessOutcome(signal="SIGABRT"), line)
    assert message.endswith("last line of stderr: 2026-12-06T19:11:58Z ERROR codex: gone")


def test_an_exit_code_and_the_watchdog_are_named(tmp_path: Path) -> None:
    assert _why_for(tmp_path, ProcessOutcome(exit_code=3)) == "Pi exited with code 3"
    watchdog = ProcessOutcome(signal="SIGTERM", termination_reason="no-progress-watchdog")
    assert _why_for(tmp_path, watchdog) == (
        "The no-progress watchdog stopped Pi (no output for too long); Pi was killed by SIGTERM"
    )


def test_a_cassette_failure_is_named_from_the_protocol_error(tmp_path: Path) -> None:
    obs = Observation()
    obs.protocol_error("cassette-exhausted", message="no interaction left in /s/g/candidate.yaml")
    (tmp_path / "stderr.log").write_bytes(b"")
    error = _why("infrastructure-failed", ProcessOutcome(exit_code=0), True, None, obs, tmp_path)
    assert error["message"] == (
        "Protocol error cassette-exhausted: no interaction left in /s/g/candidate.yaml"
    )


@pytest.mark.pi
def test_a_crashed_pi_leaves_an_error_that_names_the_signal(pytester: pytest.Pytester) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="crashed",
        turns=["Read the notes."],
        tools=["read"],
        candidate=variant([declared], 0),
        scripts={"candidate": [{"text": "Too late.", "latency_ms": SLOW}]},
    )
    suite = build(root, [group])
    with reaped(
        popen(pytester, skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite))
    ) as child:
        runs = root / ".skill-eval" / "runs"

        def waiting() -> Path | None:
            found = sorted(runs.glob("*/groups/crashed/candidate")) if runs.is_dir() else []
            if found and events_containing(found[0] / "events.jsonl", "turn_start") >= 1:
                return found[0]
            return None

        variant_dir = wait_for(waiting, "the first model turn")
        workspace = (variant_dir / "workspace").resolve()
        subjects = wait_for(
            lambda: [p for p in pi_processes(workspace) if p.cwd() == str(workspace)], "Pi"
        )
        subjects[0].send_signal(signal.SIGABRT)
        out, _ = child.communicate(timeout=120)
    assert child.returncode == 1, out
    run = read_json(variant_dir / "run.json")
    assert run["state"] == "infrastructure-failed"
    assert run["process"]["signal"] == "SIGABRT"
    assert run["error"]["kind"] == "infrastructure"
    assert run["error"]["message"].startswith("Pi was killed by SIGABRT"), run["error"]
