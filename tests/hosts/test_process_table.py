"""The process table polled by the guardian and the watchdog: read again only where it changed,
and no descendant missed for it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil
import pytest

from pytest_skill_eval.hosts import guardian
from pytest_skill_eval.hosts.guardian import Processes, descendants
from pytest_skill_eval.hosts.process import HostProcess, ProcessOutcome
from tests.support.processes import DEATH_S, dead, wait_for


def test_a_process_is_read_again_only_when_its_proc_entry_is_a_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every poll here lists /proc, as if some process had started before each.
    polls = iter(range(1000))
    monkeypatch.setattr(guardian, "_last_pid", lambda: str(next(polls)).encode())
    child = subprocess.Popen(["sleep", "60"])
    try:
        processes = Processes()
        first = processes.table()
        stat = first[child.pid]
        reads: list[str] = []
        real = guardian._stat

        def counted(pid: str) -> tuple[int, float] | None:
            reads.append(pid)
            return real(pid)

        monkeypatch.setattr(guardian, "_stat", counted)
        assert processes.table()[child.pid] == stat
        assert str(child.pid) not in reads  # the same entry: not read again
        assert processes.changed == bool(reads)  # whether any process was new
        inode = os.stat(f"/proc/{child.pid}").st_ino
        # What was read for an entry is kept while its inode is the same...
        processes._known[child.pid] = (inode, (1, 0.0))
        assert processes.table()[child.pid] == (1, 0.0)
        assert processes.table(fresh=True)[child.pid] == stat  # ...unless every entry is read
        # ...and an entry with another inode (a pid reused by a new process) is read again.
        processes._known[child.pid] = (inode + 1, (1, 0.0))
        assert processes.table()[child.pid] == stat
        assert processes.changed
        assert reads.count(str(child.pid)) == 2
    finally:
        child.kill()
        child.wait()
    assert child.pid not in Processes().table()


def _listings(monkeypatch: pytest.MonkeyPatch, last_pids: list[bytes | None]) -> list[bool]:
    """Whether each of a run of polls listed /proc, the kernel's last pid read as `last_pids`."""
    reads = iter(last_pids)
    monkeypatch.setattr(guardian, "_last_pid", lambda: next(reads))
    listings: list[str] = []
    real = os.scandir

    def counted(path: str) -> object:
        listings.append(path)
        return real(path)

    monkeypatch.setattr(os, "scandir", counted)
    processes, listed = Processes(), []
    for _ in last_pids:
        before = len(listings)
        processes.table()
        listed.append(len(listings) > before)
    return listed


def test_a_poll_lists_nothing_once_no_pid_was_handed_out_for_a_whole_poll(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    polls: list[bytes | None] = [b"100", b"101", b"101", b"101", b"101", b"102", b"102", b"102"]
    # A new last pid is listed twice: its process shows in /proc a moment after the pid is
    # handed out, so only a listing a whole poll later is sure to hold it.
    assert _listings(monkeypatch, polls) == [True, True, True, False, False, True, True, False]


def test_a_last_pid_field_that_never_moves_is_never_trusted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A sandboxed kernel's fake /proc/loadavg ("0/0 0", or any fixed value): every poll lists.
    assert _listings(monkeypatch, [b"7"] * 5) == [True] * 5
    assert _listings(monkeypatch, [None] * 3) == [True] * 3


def test_the_kernels_last_pid_is_read_and_a_process_started_since_is_found() -> None:
    assert (guardian._last_pid() or b"").isdigit()
    processes = Processes()
    processes.table()
    child = subprocess.Popen(["sleep", "60"])
    try:
        assert child.pid in processes.table()  # a process started since: listed, and found
        assert processes.changed
        assert child.pid in processes.table(fresh=True)  # fresh always lists
    finally:
        child.kill()
        child.wait()


def test_descendants_are_every_process_below_one() -> None:
    now = {10: (1, 0.0), 11: (10, 0.0), 12: (11, 0.0), 13: (1, 0.0), 14: (13, 0.0)}
    assert sorted(descendants(now, 10)) == [11, 12]
    assert descendants(now, 12) == []


def test_a_descendant_started_between_ticks_under_a_process_seen_before_is_killed(
    tmp_path: Path,
) -> None:
    # The host's child starts a process in a session of its own after the first tick, then
    # exits: only the record of what was seen below the host still says whose it is.
    script = (
        "sh -c 'while [ ! -e go ]; do sleep 0.02; done; setsid sleep 60 & echo $! > grand; "
        "while [ ! -e done ]; do sleep 0.02; done' & wait"
    )
    host = HostProcess(
        argv=["sh", "-c", script],
        env={"PATH": os.environ.get("PATH", os.defpath)},
        cwd=tmp_path,
        events_path=tmp_path / "events.jsonl",
        stderr_path=tmp_path / "stderr.log",
        interactive=False,
    )
    host.start()
    grand = 0
    try:
        wait_for(lambda: psutil.Process(host.pid).children(), "the host's child")
        assert not host.stalled()  # a tick: every process read
        (tmp_path / "go").touch()
        pidfile = tmp_path / "grand"
        grand = int(wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), "it"))
        assert not host.stalled()  # a tick: only what is new read
        (tmp_path / "done").touch()
        assert host.wait(60) == 0
        outcome = host.finish(ProcessOutcome())
        assert outcome.descendants_killed == 1
        wait_for(lambda: dead(grand), "the grandchild to die", DEATH_S)
    finally:
        if grand and psutil.pid_exists(grand):
            os.kill(grand, 9)
        host.kill_now()


class _Scripted:
    """A process table that is what a test says it is, new each time it is set."""

    def __init__(self) -> None:
        self.now: dict[int, tuple[int, float]] = {}
        self.changed = True

    def table(self, *, fresh: bool = False) -> dict[int, tuple[int, float]]:
        return dict(self.now)


def test_the_guardian_finds_a_process_started_below_one_it_saw_before() -> None:
    watch = guardian.Watch("/nowhere")
    scripted = _Scripted()
    watch.processes = scripted  # type: ignore[assignment]
    watch.roots = {(100, 1.0)}
    scripted.now = {100: (1, 1.0), 101: (100, 2.0)}
    watch.track()
    assert watch.seen == {(101, 2.0)}
    # The child, seen already, starts a grandchild: the next walk records it too.
    scripted.now |= {102: (101, 3.0)}
    watch.track()
    assert watch.seen == {(101, 2.0), (102, 3.0)}
