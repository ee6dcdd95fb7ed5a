"""The guardian's sweeps, the isolated home it guards, and the exit wait every subject's process
goes through."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pytest_skill_eval.hosts import host_for, reaper
from pytest_skill_eval.hosts import launch as launching
from pytest_skill_eval.hosts.base import Endpoint
from pytest_skill_eval.hosts.guardian import table as process_table
from pytest_skill_eval.hosts.launch import isolated_home
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


def test_the_homes_guardian_sweeps_each_process_and_stays_on_for_the_next(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    guardian = Guardian.start(workspace, home)
    first = subprocess.Popen(["sleep", "60"])
    escaped = subprocess.Popen(["sleep", "60"], cwd=workspace, start_new_session=True)
    second = subprocess.Popen(["sleep", "60"])
    try:
        guardian.watch(first.pid)
        guardian.sweep()  # returns once it has answered: what was left of the first is killed
        assert wait_exit(first, 30) == -signal.SIGKILL
        assert wait_exit(escaped, 30) == -signal.SIGKILL
        guardian.watch(second.pid)  # the home's next process: still watched
        guardian.release()
        assert wait_exit(second, 30) == -signal.SIGKILL
        assert home.is_dir()  # released by a living evaluator: its home to delete
    finally:
        for process in (first, escaped, second):
            process.kill()
            process.wait()


# A process that makes an isolated home (Pi's, written as for a run), says where, and waits.
_MAKES_A_HOME = """
import sys, time
from pathlib import Path
from pytest_skill_eval.hosts import host_for
from pytest_skill_eval.hosts.base import Endpoint
from pytest_skill_eval.hosts.launch import isolated_home
endpoint, workspace = Endpoint(mode="live", model=None), Path(sys.argv[1])
with isolated_home(host_for("pi"), endpoint, prefix="skill-eval-", workspace=workspace) as home:
    (home.config / "auth.json").write_text("{}")
    print(home.root)
    print(home.config / "auth.json", flush=True)
    time.sleep(120)
"""


def test_a_home_is_deleted_when_the_evaluator_dies_before_its_host_starts(tmp_path: Path) -> None:
    # A pre-started subject's home waits for a start-up slot before its host is spawned, and a
    # host that starts a process per turn leaves its home between two: no host process runs,
    # and a killed evaluator must still leave no home (which may hold credentials) behind.
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    environ = {**os.environ, "TMPDIR": str(tmp_path)}
    evaluator = subprocess.Popen(
        [sys.executable, "-c", _MAKES_A_HOME, str(workspace)],
        stdout=subprocess.PIPE,
        env=environ,
        text=True,
    )
    try:
        assert evaluator.stdout is not None
        root, credentials = (Path(evaluator.stdout.readline().strip()) for _ in range(2))
        assert credentials.is_file()
        assert root in credentials.parents
    finally:
        evaluator.kill()
        evaluator.wait()
    wait_for(lambda: not root.exists(), "the guardian to delete the home", DEATH_S)


def test_a_home_name_already_taken_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    taken = tmp_path / "skill-eval-taken"
    taken.mkdir()
    (taken / "theirs").write_text("kept", encoding="utf-8")
    names = iter(["taken", "fresh"])
    monkeypatch.setattr(launching, "_random_name", lambda: next(names))
    theirs = subprocess.Popen(["sleep", "60"], cwd=taken)
    try:
        endpoint = Endpoint(mode="live", model=None)
        with isolated_home(host_for("pi"), endpoint, prefix="skill-eval-") as home:
            assert home.root == tmp_path / "skill-eval-fresh"
        assert not home.root.exists()
        # The guardian started for the taken name neither swept nor deleted what is there.
        assert (taken / "theirs").read_text(encoding="utf-8") == "kept"
        assert theirs.poll() is None
    finally:
        theirs.kill()
        theirs.wait()


def test_a_sweep_not_answered_in_time_is_never_carried_out_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    guardian = Guardian.start(workspace, home)
    first, stuck = subprocess.Popen(["sleep", "60"]), guardian.pid
    later: subprocess.Popen[bytes] | None = None
    try:
        guardian.watch(first.pid)
        monkeypatch.setattr(reaper, "RELEASE_WAIT_S", 0.0)
        guardian.sweep()  # not answered at once: taken for stuck
        monkeypatch.undo()
        # The stuck guardian is gone, so the sweep it was asked for never comes; a new one
        # guards the home. The home's next process, working in the workspace, is left alone.
        wait_for(lambda: dead(stuck), "the stuck guardian to be gone", DEATH_S)
        assert guardian.pid != stuck
        later = subprocess.Popen(["sleep", "60"], cwd=workspace)
        guardian.sweep()
        assert later.poll() is None
        guardian.watch(later.pid)
        guardian.release()
        assert wait_exit(later, 30) == -signal.SIGKILL  # the new guardian watched it
        assert home.is_dir()
    finally:
        for process in (first, later):
            if process is not None:
                process.kill()
                process.wait()
