"""A guardian process per subject: whatever kills the evaluator, nothing started for it survives.

The evaluator's own cleanup (process-group signals, a psutil sweep of every descendant seen)
cannot run when the evaluator is killed with SIGKILL, and a declared command runs in a process
group of its own, so it would outlive both Pi and the evaluator. Before the subject starts, the
evaluator starts this module as a small separate process (its own session, SIGINT and SIGHUP
ignored, working directory ``/``) that holds the read end of a pipe. The evaluator writes the
subject's pid into it; the guardian keeps a list of every descendant it sees. When the pipe
reaches end of file (the evaluator released it after its own cleanup, or the kernel closed it
because the evaluator died, however it died), the guardian SIGKILLs the subject's process
group, every descendant it saw (psutil checks creation times, so a reused pid is never hit),
the process group of each, and every process whose working directory lies in the subject's
workspace; then it exits.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, NoReturn

import psutil

POLL_S = 0.2
RELEASE_WAIT_S = 5.0


def wait_exit(process: subprocess.Popen[bytes], timeout: float | None) -> int | None:
    """`process`'s exit status once it exits, or None if it still runs after `timeout`.

    `Popen.wait(timeout)` polls with sleeps that double up to 50 ms, so it notices an exit up to
    twice as late as it happened; every subject pays that on each wait. On Linux a pidfd wakes
    the moment the process exits; elsewhere this is `Popen.wait`.
    """
    if timeout is None or process.returncode is not None:
        return process.wait()
    try:
        fd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        try:
            ready, _, _ = select.select([fd], [], [], timeout)
        finally:
            os.close(fd)
        if not ready:
            return process.poll()
        return process.wait()
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


class Guardian:
    """The evaluator's handle on one guardian process (see the module docs)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        self._released = False

    @classmethod
    def start(cls, workspace: Path) -> Guardian:
        """Start a guardian for a subject that will run in `workspace` (before starting it)."""
        process = subprocess.Popen(
            [sys.executable, "-I", os.path.abspath(__file__), os.path.realpath(workspace)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
        return cls(process)

    def watch(self, pid: int) -> None:
        """Tell the guardian the subject's pid."""
        stdin = self._process.stdin
        if stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            stdin.write(f"{pid}\n".encode("ascii"))
            stdin.flush()

    def release(self) -> None:
        """After the evaluator's own cleanup: let the guardian make its last sweep and exit."""
        if self._released:
            return
        self._released = True
        stdin = self._process.stdin
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()
        if wait_exit(self._process, RELEASE_WAIT_S) is None:
            self._process.kill()
            self._process.wait()


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _under(cwd: str, root: str) -> bool:
    return cwd == root or cwd.startswith(root.rstrip("/") + "/")


class _Watch:
    """The guardian's side: the subjects it was told about and every descendant it saw."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.roots: dict[int, psutil.Process] = {}
        self.seen: dict[int, psutil.Process] = {}

    def add(self, pid: int) -> None:
        with contextlib.suppress(psutil.Error):
            self.roots[pid] = psutil.Process(pid)

    def track(self) -> None:
        for root in list(self.roots.values()):
            try:
                for child in root.children(recursive=True):
                    self.seen.setdefault(child.pid, child)
            except psutil.Error:
                continue

    def sweep(self) -> int:
        """SIGKILL everything of the subject still alive; how many processes were hit."""
        self.track()
        hit = 0
        me = os.getpid()
        for pid, process in [*self.roots.items(), *self.seen.items()]:
            if not _alive(process):
                continue
            with contextlib.suppress(OSError):
                if os.getpgid(pid) == pid:
                    os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(psutil.Error):
                process.kill()
            hit += 1
        for pid in _working_in(self.workspace):
            if pid == me:
                continue
            with contextlib.suppress(psutil.Error):
                process = psutil.Process(pid)
                if _alive(process):
                    process.kill()
                    hit += 1
        return hit


def _working_in(root: str) -> list[int]:
    """Pids whose working directory lies in `root`, read straight from /proc (psutil's
    process_iter builds a Process per pid first: several times slower, and on the path of
    every subject's end)."""
    found: list[int] = []
    try:
        entries = os.scandir("/proc")
    except OSError:
        return [p.pid for p in psutil.process_iter(["cwd"]) if _under(p.info["cwd"] or "", root)]
    with entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                cwd = os.readlink(f"/proc/{entry.name}/cwd")
            except OSError:
                continue  # gone, or not ours to read
            if _under(cwd, root):
                found.append(int(entry.name))
    return found


def _serve(stream: IO[bytes], workspace: str) -> None:
    watch = _Watch(workspace)
    fd = stream.fileno()
    pending = b""
    while True:
        ready, _, _ = select.select([fd], [], [], POLL_S)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip().isdigit():
                    watch.add(int(line))
        watch.track()
    # A killed parent may still be forking for a moment: sweep until nothing is left.
    for _ in range(5):
        if not watch.sweep():
            break


def main(argv: list[str]) -> NoReturn:
    """Guardian entry point: ``reaper.py WORKSPACE``, subject pids on stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the evaluator's to handle
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    _serve(sys.stdin.buffer, argv[1])
    # Nothing is left to flush (its output is /dev/null), and the evaluator waits on this exit:
    # skip the interpreter's teardown.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
