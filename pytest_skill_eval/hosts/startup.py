"""Host start-ups that do not line up: at most one per core at a time, machine-wide.

A host CLI spends its first second or two of CPU starting (Node loading its bundle, extensions,
configuration) and then mostly waits on the model. With more workers than cores, starting every
subject at once makes those bursts compete, and the workers then wait out the model's latency
together, round after round. A start-up slot per core, held from spawning the host until the
model endpoint sees its first request (or the host exits, or `HOLD_S` passes), spreads the
bursts out so that one subject's start-up overlaps another's wait.

Slots are `flock` locks on files in one directory per user, shared by every evaluator process on
the machine (xdist workers, concurrent sessions); the kernel releases a lock whose holder died.
Only the time a subject waited for its slot is recorded; nothing here touches evidence.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .process import HostProcess

POLL_S = 0.02
HOLD_S = 5.0  # the longest a start-up holds its slot: a slow host never blocks the others


SLOTS_ENV = "SKILL_EVAL_STARTUP_SLOTS"


def slot_count() -> int:
    """Start-ups allowed at once: `SKILL_EVAL_STARTUP_SLOTS`, else the CPUs this process may
    use (a container's CPU set, not the host's); 0 turns the gate off."""
    raw = os.environ.get(SLOTS_ENV, "").strip()
    if raw.isdigit():
        return int(raw)
    return len(os.sched_getaffinity(0)) or 1


def slot_directory() -> Path:
    """The per-user directory of slot files (created private on first use)."""
    path = Path(tempfile.gettempdir()) / f"pytest-skill-eval-startup-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


class StartupSlot:
    """A held start-up slot; released once, by `release` or when `release_when` is satisfied."""

    def __init__(self, fd: int | None, waited_s: float) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self.waited_s = waited_s

    @property
    def held(self) -> bool:
        """Whether this subject holds a slot (False: it went ahead without one)."""
        return self._fd is not None

    def release(self) -> None:
        """Give the slot back (idempotent)."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops its flock

    def release_when(self, ready: Callable[[], bool], hold_s: float = HOLD_S) -> None:
        """Release in the background once `ready()` is true, or after `hold_s` at the latest."""

        def watch() -> None:
            deadline = time.monotonic() + hold_s
            while time.monotonic() < deadline:
                try:
                    if ready():
                        break
                except Exception:
                    break  # a failing probe must never keep the slot
                time.sleep(POLL_S)
            self.release()

        threading.Thread(target=watch, name="startup-slot", daemon=True).start()


def acquire(
    cancelled: Callable[[], bool],
    *,
    slots: int | None = None,
    directory: Path | None = None,
) -> StartupSlot:
    """Wait for a free start-up slot (`slot_count()` unless told). On cancellation, with the
    gate off, or when the slot files cannot be used, the subject goes ahead without one."""
    count = slots if slots is not None else slot_count()
    start = time.monotonic()
    if count < 1:
        return StartupSlot(None, 0.0)
    try:
        where = directory or slot_directory()
        fds = [
            os.open(where / f"slot-{index}", os.O_RDWR | os.O_CREAT, 0o600)
            for index in range(count)
        ]
    except OSError:
        return StartupSlot(None, 0.0)
    try:
        while True:
            for fd in fds:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                fds.remove(fd)
                return StartupSlot(fd, time.monotonic() - start)
            if cancelled():
                return StartupSlot(None, time.monotonic() - start)
            time.sleep(POLL_S)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def start_when_free(
    process: HostProcess, received: Callable[[], int] | None, cancelled: Callable[[], bool]
) -> None:
    """Spawn `process` in a start-up slot, held until its model endpoint has `received` a
    request or the host exited; without a way to tell (live traffic), spawn it at once."""
    slot = acquire(cancelled) if received is not None else None
    process.queued_s = slot.waited_s if slot is not None else 0.0
    try:
        process.start()
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    if slot is not None and received is not None:
        count = received
        slot.release_when(lambda: count() > 0 or process.wait(0) is not None)
