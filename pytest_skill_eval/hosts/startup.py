"""Host start-ups that do not line up: at most one per core at a time, machine-wide.

A host CLI spends its first second or two of CPU starting (Node loading its bundle, extensions,
configuration) and then mostly waits on the model. With more workers than cores, starting every
subject at once makes those bursts compete, and the workers then wait out the model's latency
together, round after round. A start-up slot per core, held from spawning the host until the
model endpoint sees its first request (or the host exits, or `HOLD_S` passes), spreads the
bursts out so that one subject's start-up overlaps another's wait.

Slots are `flock` locks on files in one directory per user, shared by every evaluator process on
the machine (xdist workers, concurrent sessions); the kernel releases a lock whose holder died.
Waiters are served first come, first served: each leaves a ticket (a file named by the
machine-wide monotonic clock, its pid and thread) and only the oldest `slots` living tickets
may try for a slot. Taking whichever slot a waiter happened to poll first had let some
subjects wait 26 s while later ones started, which left their workers behind and the run
ending on them. A start-up nobody waits on yet (a pre-started candidate, whose run begins only
after its baseline's) queues behind every start-up a worker is blocked on, until its run may
begin. Nor do such start-ups ever hold every slot at once (unless there is only one): each
also holds one of `slots - 1` pre-start tokens, given back with its slot or as soon as its run
begins (a worker is then blocked on it). So one slot, and its core, stays for start-ups a worker
is blocked on and for the work of the subjects already running (a reply read, a tool, an exit,
a record), which pre-starts loading on every core used to slow. Sessions that count
slots differently (`SKILL_EVAL_STARTUP_SLOTS`, another CPU set) share the files as they are,
so these limits hold among sessions that agree. Only the time a subject waited for its slot is
recorded; nothing here touches evidence.
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
VERIFY_EVERY = 50  # polls between checks that the waiters ahead still live (about 1 s)
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
    """A held start-up slot (and a pre-start's token with it); released once, by `release` or
    when `release_when` is satisfied."""

    def __init__(self, fd: int | None, waited_s: float, token: int | None = None) -> None:
        self._fd = fd
        self._token = token
        self._lock = threading.Lock()
        self.waited_s = waited_s

    @property
    def held(self) -> bool:
        """Whether this subject holds a slot (False: it went ahead without one)."""
        return self._fd is not None

    def release(self) -> None:
        """Give the slot back, and a pre-start's token with it (idempotent)."""
        self.give_back_token()
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops its flock

    def give_back_token(self) -> None:
        """Give back a pre-start's token, keeping the slot (idempotent)."""
        with self._lock:
            token, self._token = self._token, None
        if token is not None:
            os.close(token)

    def release_when(
        self,
        ready: Callable[[], bool],
        hold_s: float = HOLD_S,
        early: Callable[[], bool] | None = None,
    ) -> None:
        """Release in the background once `ready()` is true, or after `hold_s` at the latest.
        A pre-start's token goes back as soon as `early()` is false: its run has begun, so a
        worker is blocked on it, and the token is for the next pre-start."""

        def watch() -> None:
            deadline = time.monotonic() + hold_s
            while time.monotonic() < deadline:
                try:
                    if ready():
                        break
                    if early is not None and not early():
                        self.give_back_token()
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
    early: Callable[[], bool] | None = None,
) -> StartupSlot:
    """Wait for a free start-up slot (`slot_count()` unless told). On cancellation, with the
    gate off, or when the slot files cannot be used, the subject goes ahead without one.

    While `early()` is true nobody waits on this start-up yet: it gives way to the others, and
    takes a slot only with a pre-start token (`count - 1` of them, none needed with one slot)."""
    count = slots if slots is not None else slot_count()
    start = time.monotonic()
    if count < 1:
        return StartupSlot(None, 0.0)
    kind = URGENT if early is None or not early() else EARLY  # asked before any file is open
    fds: list[int] = []
    tokens: list[int] = []
    try:
        where = directory or slot_directory()
        for index in range(count):
            fds.append(os.open(where / f"slot-{index}", os.O_RDWR | os.O_CREAT, 0o600))
        for index in range(count - 1):
            tokens.append(os.open(where / f"early-{index}", os.O_RDWR | os.O_CREAT, 0o600))
        ticket, held = _queue(where, kind)
    except OSError:
        for fd in fds + tokens:
            os.close(fd)
        return StartupSlot(None, 0.0)
    try:
        polls = 0
        while True:
            if ticket.name.startswith(EARLY) and early is not None and not early():
                ticket = _promote(ticket)
            # Whether the waiters ahead still live is checked about once a second: it costs a
            # lock attempt each, and a waiter dies without removing its ticket only when killed.
            ahead, urgent = _ahead(where, ticket.name, verify=polls % VERIFY_EVERY == 0)
            # The oldest `count` waiters try for the slots, but an early one never while an
            # urgent one waits (it would take the one slot that waiter needs), nor without a
            # token (with one slot, it needs none).
            early_ticket = ticket.name.startswith(EARLY)
            needs_token = early_ticket and bool(tokens)
            if ahead < count and not (urgent and early_ticket):
                token = _lock_any(tokens) if needs_token else None
                slot = _lock_any(fds) if token is not None or not needs_token else None
                if slot is not None:
                    fds.remove(slot)
                    if token is not None:
                        tokens.remove(token)
                    return StartupSlot(slot, time.monotonic() - start, token)
                if token is not None:
                    fcntl.flock(token, fcntl.LOCK_UN)
            if cancelled():
                return StartupSlot(None, time.monotonic() - start)
            # Far back in the queue, look less often.
            time.sleep(POLL_S * min(1 + max(0, ahead - count), 10))
            polls += 1
    finally:
        with contextlib.suppress(OSError):
            ticket.unlink()
        os.close(held)
        for fd in fds + tokens:
            with contextlib.suppress(OSError):
                os.close(fd)


def _lock_any(fds: list[int]) -> int | None:
    """The first of `fds` this process could lock (exclusively, without waiting), or None."""
    for fd in fds:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        return fd
    return None


TICKET = "waiting-"
# Ticket names sort urgent start-ups first, then by when they came.
URGENT, EARLY = f"{TICKET}0-", f"{TICKET}1-"


def _queue(where: Path, kind: str) -> tuple[Path, int]:
    """This waiter's ticket, locked for as long as it waits (the kernel drops the lock of a
    waiter that died, which is how the others tell), and the descriptor holding the lock.
    Locked before it is given its name, so nobody ever sees it unlocked."""
    name = f"{time.monotonic_ns():020d}-{os.getpid()}-{threading.get_ident()}"
    draft = where / f".{name}"
    fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        ticket = where / f"{kind}{name}"
        os.rename(draft, ticket)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            draft.unlink()
        raise
    return ticket, fd


def _promote(ticket: Path) -> Path:
    """An early ticket made urgent, keeping when it came (a rename keeps its lock)."""
    urgent = ticket.with_name(URGENT + ticket.name[len(EARLY) :])
    try:
        os.rename(ticket, urgent)
    except OSError:
        return ticket
    return urgent


def _ahead(where: Path, mine: str, *, verify: bool) -> tuple[int, int]:
    """How many waiters queued before `mine`, and how many of them are urgent; with `verify`,
    only living ones count (the ticket of a waiter that died is removed on the way)."""
    try:
        names = os.listdir(where)
    except OSError:
        return 0, 0  # the queue cannot be read: try for a slot as before
    earlier = [n for n in names if n.startswith(TICKET) and n < mine]
    if verify:
        earlier = [name for name in earlier if _waiting(where / name)]
    return len(earlier), sum(1 for name in earlier if name.startswith(URGENT))


def _waiting(ticket: Path) -> bool:
    """Whether the waiter of `ticket` still waits: its lock is held (else the ticket goes)."""
    try:
        fd = os.open(ticket, os.O_RDWR)
    except OSError:
        return False  # gone: its waiter took a slot or gave up
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return True  # cannot tell: count it
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        ticket.unlink()  # its waiter died without removing it
    return False


def start_when_free(
    process: HostProcess,
    received: Callable[[], int] | None,
    cancelled: Callable[[], bool],
    early: Callable[[], bool] | None = None,
) -> None:
    """Spawn `process` in a start-up slot, held until its model endpoint has `received` a
    request or the host exited; without a way to tell (live traffic), spawn it at once.
    `early`: see `acquire`."""
    slot = acquire(cancelled, early=early) if received is not None else None
    process.queued_s = slot.waited_s if slot is not None else 0.0
    try:
        process.start()
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    if slot is not None and received is not None:
        count = received
        slot.release_when(lambda: count() > 0 or process.wait(0) is not None, early=early)
