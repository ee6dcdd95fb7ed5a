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
from typing import IO

import psutil

POLL_S = 0.2
RELEASE_WAIT_S = 5.0


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
        try:
            self._process.wait(timeout=RELEASE_WAIT_S)
        except subprocess.TimeoutExpired:
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
        for process in psutil.process_iter(["cwd"]):
            cwd = process.info.get("cwd")
            if process.pid != me and cwd and _under(cwd, self.workspace) and _alive(process):
                with contextlib.suppress(psutil.Error):
                    process.kill()
                    hit += 1
        return hit


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


def main(argv: list[str]) -> int:
    """Guardian entry point: ``reaper.py WORKSPACE``, subject pids on stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the evaluator's to handle
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    _serve(sys.stdin.buffer, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
