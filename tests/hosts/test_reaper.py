"""The guardian's last sweep, and the exit wait every subject's process goes through."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from pytest_skill_eval.hosts.reaper import Guardian, wait_exit


def test_wait_exit_gives_the_status_of_a_process_that_exits() -> None:
    process = subprocess.Popen(["sh", "-c", "exit 3"])
    assert wait_exit(process, 30) == 3
    assert wait_exit(process, 30) == 3  # already reaped: the same status, at once


def test_wait_exit_is_none_while_the_process_runs_and_sees_a_kill() -> None:
    process = subprocess.Popen(["sleep", "60"])
    try:
        assert wait_exit(process, 0.05) is None
        assert process.returncode is None
    finally:
        process.kill()
    assert wait_exit(process, 30) == -signal.SIGKILL


def test_the_guardian_kills_what_still_runs_in_the_workspace_when_released(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    guardian = Guardian.start(workspace)
    watched = subprocess.Popen(["sleep", "60"])
    # Escaped: its own session, never reported to the guardian, only its directory says whose.
    escaped = subprocess.Popen(["sleep", "60"], cwd=workspace, start_new_session=True)
    outside = subprocess.Popen(["sleep", "60"], cwd=tmp_path)
    try:
        guardian.watch(watched.pid)
        guardian.release()
        assert wait_exit(watched, 30) == -signal.SIGKILL
        assert wait_exit(escaped, 30) == -signal.SIGKILL
        assert outside.poll() is None  # not the subject's: left alone
    finally:
        for process in (watched, escaped, outside):
            process.kill()
            process.wait()
