"""After ``kill -9`` of pytest, nothing started for a subject is left running."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests.support.files import write
from tests.support.processes import DEATH_S, pi_processes, wait_for
from tests.support.roots import Group, build, skill, variant
from tests.support.runs import popen, skill_eval_args

pytestmark = pytest.mark.pi


def _sleeps(root: Path) -> list[psutil.Process]:
    """The declared command's grandchild: `sleep 300` started by `sh` in the workspace."""
    found = []
    for process in pi_processes(root):
        try:
            if process.cmdline() == ["sleep", "300"]:
                found.append(process)
        except psutil.Error:
            continue
    return found


def test_kill_9_of_pytest_leaves_no_process_of_the_subject_and_no_home(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    homes = pytester.path / "tmp"
    homes.mkdir()
    monkeypatch.setenv("TMPDIR", str(homes))  # the child makes its isolated homes here
    root = pytester.path / "root"
    write(root / "fixture" / "README.md", "A task.\n")
    declared = skill(root, "sleeper")
    group = Group(
        id="sleepy",
        turns=["Wait for a while."],
        tools=["read", "run_command"],
        candidate=variant([declared], 0),
        # `; true` keeps sh alive as the parent of sleep: a child of a child of Pi.
        commands=[{"id": "nap", "argv": ["sh", "-c", "sleep 300; true"], "timeout_ms": 600_000}],
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "nap"}}]},
                {"text": "Rested."},
            ]
        },
    )
    suite = build(root, [group])
    child = popen(pytester, skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite))
    try:
        wait_for(lambda: _sleeps(root), "the declared sleep")
        assert pi_processes(root), "Pi and the command run in the workspace"
        assert list(homes.glob("skill-eval-pi-*")), "the subject's isolated home"
        psutil.Process(child.pid).kill()  # SIGKILL: no cleanup of the evaluator can run
        child.wait(timeout=30)
        # Killed by the guardian, each dies when the kernel next runs it: waited for, well
        # short of the 300 s the sleep would live otherwise.
        wait_for(lambda: not pi_processes(root), "the subject's processes to die", DEATH_S)
        # The home the evaluator could not delete (it may hold credentials) went with them.
        wait_for(lambda: not list(homes.glob("skill-eval-pi-*")), "the home to be deleted")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for process in pi_processes(root):
            process.kill()
