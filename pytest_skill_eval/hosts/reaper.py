"""A guardian process per subject: whatever kills the evaluator, nothing started for it survives.

The evaluator's own cleanup (process-group signals, a psutil sweep of every descendant seen)
cannot run when the evaluator is killed with SIGKILL, and a declared command runs in a process
group of its own, so it would outlive both Pi and the evaluator. When it makes a subject's
isolated home, before anything is written there, the evaluator starts this module as a small
separate process (its own session, SIGINT and SIGHUP ignored, working directory ``/``) that
holds the read end of a pipe; a pre-started subject's home may wait a while for its start-up
slot, and a host that starts a process per turn leaves its home between two of them, and the
guardian covers both. The evaluator writes the pid of each of the subject's processes into
the pipe; the guardian keeps a list of every descendant it sees. When one of them has ended
and the evaluator has cleaned up after it, it asks for a `sweep`: the guardian SIGKILLs the
process group of each process it was told of, every descendant it saw (each known by its start
time too, so a reused pid is never hit), the process group of each, and every process whose
working directory lies in the subject's workspace, and answers. When the pipe reaches end of
file (the evaluator released it once the home was deleted, or the kernel closed it because the
evaluator died, however it died), the guardian sweeps the same way and exits. When the pipe
ended without the evaluator's last word (`released`), the evaluator died, and the guardian
also deletes the subject's isolated home, which the evaluator would have deleted and which
may hold credentials. The guardian itself is `guardian.py`, which imports only what is built
into the interpreter, so a subject pays a few milliseconds of CPU for it.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
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

    def __init__(self, argv: list[str]) -> None:
        self._argv = argv
        self._process = self._spawn()
        self._released = False

    @classmethod
    def start(cls, workspace: Path, home: Path | None = None) -> Guardian:
        """Start a guardian for a subject that will run in `workspace` (before starting it),
        with its isolated `home` to delete should the evaluator die (started before anything is
        written there)."""
        argv = [sys.executable, *_FLAGS, _GUARDIAN, os.path.realpath(workspace)]
        return cls([*argv, str(home)] if home is not None else argv)

    @property
    def pid(self) -> int:
        """The guardian process's pid (a new one once a stuck guardian was replaced)."""
        return self._process.pid

    def _spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )

    def watch(self, pid: int) -> None:
        """Tell the guardian the subject's pid."""
        stdin = self._process.stdin
        if stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            stdin.write(f"{pid}\n".encode("ascii"))
            stdin.flush()

    def sweep(self) -> None:
        """After one of the home's processes ended and the evaluator's own cleanup: SIGKILL what
        is left of the processes watched so far, as a release would, the guardian staying on
        for the home's next process. Returns once it has answered (or is gone)."""
        stdin, stdout = self._process.stdin, self._process.stdout
        if self._released or stdin is None or stdout is None:
            return
        try:
            stdin.write(guardian.SWEEP + b"\n")
            stdin.flush()
        except (OSError, ValueError):
            return
        deadline = time.monotonic() + RELEASE_WAIT_S
        answer = b""
        while not answer.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([stdout], [], [], max(left, 0))
            if not ready:
                # Stuck: it must not carry out this sweep later, when the home's next process
                # may run in the workspace. A new guardian takes the home over first.
                self._replace()
                return
            chunk = os.read(stdout.fileno(), 64)
            if not chunk:
                return  # gone
            answer += chunk

    def _replace(self) -> None:
        stuck, self._process = self._process, self._spawn()
        stuck.kill()
        stuck.wait()
        _close(stuck)

    def dismiss(self) -> None:
        """Stop a guardian that was told of nothing, without a sweep or a deletion (its home
        could not be made)."""
        self._released = True
        self._process.kill()
        self._process.wait()
        _close(self._process)

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
        _close(self._process)


def _close(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
