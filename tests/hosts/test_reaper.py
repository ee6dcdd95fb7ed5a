"""The guardian's last sweep, and the exit wait every subject's process goes through."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from pytest_skill_eval.hosts.guardian import table as process_table
from pytest_skill_eval.hosts.reaper import Guardian, wait_exit
from tests.support.processes import DEATH_S, dead, wait_for


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
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    guardian = Guardian.start(workspace, home)
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
        assert (home / ".codex").is_dir()  # released by a living evaluator: its home to delete
    finally:
        for process in (watched, escaped, outside):
            process.kill()
            process.wait()


def test_the_guardian_kills_a_descendant_that_left_the_session_and_the_workspace(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    pidfile = tmp_path / "grandchild.pid"
    guardian = Guardian.start(workspace)
    # The grandchild starts a session of its own outside the workspace: only the guardian's
    # record of the subject's descendants says whose it is.
    watched = subprocess.Popen(
        ["sh", "-c", f'setsid sleep 60 & echo $! > "{pidfile}"; wait'], cwd=tmp_path
    )
    try:
        guardian.watch(watched.pid)
        grandchild = int(
            wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), "the grandchild")
        )
        guardian.release()
        assert wait_exit(watched, 30) == -signal.SIGKILL
        wait_for(lambda: dead(grandchild), "the grandchild to die", DEATH_S)
    finally:
        watched.kill()
        watched.wait()
        if pidfile.exists() and pidfile.read_text().strip():
            with contextlib.suppress(OSError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)  # only if it escaped


def test_the_guardian_reads_a_process_whose_name_holds_parentheses_and_spaces() -> None:
    code = "open('/proc/self/comm', 'w').write('a) b (c'); import time; time.sleep(60)"
    named = subprocess.Popen([sys.executable, "-c", code])
    try:
        comm = Path(f"/proc/{named.pid}/comm")
        wait_for(lambda: comm.read_text().strip() == "a) b (c", "the name to be set")
        parent, start = process_table()[named.pid]
        assert parent == os.getpid()
        assert start == process_table()[named.pid][1] > 0
    finally:
        named.kill()
        named.wait()
    assert named.pid not in process_table()  # reaped: gone from the table
