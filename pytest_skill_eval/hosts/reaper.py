"""A guardian process per subject: whatever kills the evaluator, nothing started for it survives.

The evaluator's own cleanup (process-group signals, a psutil sweep of every descendant seen)
cannot run when the evaluator is killed with SIGKILL, and a declared command runs in a process
group of its own, so it would outlive both Pi and the evaluator. Before the subject starts, the
evaluator starts this module as a small separate process (its own session, SIGINT and SIGHUP
ignored, working directory ``/``) that holds the read end of a pipe. The evaluator writes the
subject's pid into it; the guardian keeps a list of every descendant it sees. When the pipe
reaches end of file (the evaluator released it after its own cleanup, or the kernel closed it
because the evaluator died, however it died), the guardian SIGKILLs the subject's process
group, every descendant it saw (each known by its start time too, so a reused pid is never
hit), the process group of each, and every process whose working directory lies in the
subject's workspace; then it exits. When the pipe ended without the evaluator's last word
(`released`), the evaluator died, and the guardian also deletes the subject's isolated home,
which the evaluator would have deleted and which may hold credentials. The guardian itself is
`guardian.py`, which imports only what is built into the interpreter, so a subject pays a few
milliseconds of CPU for it.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
from pathlib import Path

from . import guardian

RELEASE_WAIT_S = 5.0
# Isolated, and without `site` where /proc serves (the guardian then imports nothing third-party).
_FLAGS = ("-I", "-S") if guardian.HAS_PROC else ("-I",)
_GUARDIAN = guardian.__file__


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
    def start(cls, workspace: Path, home: Path | None = None) -> Guardian:
        """Start a guardian for a subject that will run in `workspace` (before starting it),
        with its isolated `home` to delete should the evaluator die."""
        argv = [sys.executable, *_FLAGS, _GUARDIAN, os.path.realpath(workspace)]
        process = subprocess.Popen(
            [*argv, str(home)] if home is not None else argv,
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
                stdin.write(guardian.RELEASED + b"\n")  # the evaluator lives: the home is its own
                stdin.flush()
            with contextlib.suppress(OSError):
                stdin.close()
        if wait_exit(self._process, RELEASE_WAIT_S) is None:
            self._process.kill()
            self._process.wait()
