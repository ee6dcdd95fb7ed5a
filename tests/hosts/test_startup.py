"""Start-up slots: one host start-up per slot at a time, released when the model is reached."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pytest_skill_eval.hosts import startup
from tests.support.processes import wait_for


def test_a_second_start_up_waits_for_the_first_to_reach_the_model(tmp_path: Path) -> None:
    first = startup.acquire(lambda: False, slots=1, directory=tmp_path)
    reached = threading.Event()
    first.release_when(reached.is_set)
    got: list[startup.StartupSlot] = []
    waiter = threading.Thread(
        target=lambda: got.append(startup.acquire(lambda: False, slots=1, directory=tmp_path))
    )
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive()  # the only slot is held until the first host reaches the model
    reached.set()
    waiter.join(5)
    assert not waiter.is_alive()
    assert got[0].waited_s > 0.2
    got[0].release()


def test_two_slots_let_two_start_at_once(tmp_path: Path) -> None:
    a = startup.acquire(lambda: False, slots=2, directory=tmp_path)
    b = startup.acquire(lambda: False, slots=2, directory=tmp_path)
    assert a.held
    assert b.held
    a.release()
    b.release()
    a.release()  # idempotent


def test_a_probe_that_never_succeeds_holds_the_slot_only_for_a_while(tmp_path: Path) -> None:
    held = startup.acquire(lambda: False, slots=1, directory=tmp_path)
    held.release_when(lambda: False, hold_s=0.2)
    again = startup.acquire(lambda: False, slots=1, directory=tmp_path)
    assert again.held
    assert again.waited_s > 0.1
    again.release()


def test_cancellation_stops_the_wait(tmp_path: Path) -> None:
    held = startup.acquire(lambda: False, slots=1, directory=tmp_path)
    cancelled = startup.acquire(lambda: True, slots=1, directory=tmp_path)
    assert not cancelled.held
    held.release()
    cancelled.release()


def test_a_dead_holders_slot_is_free(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from pytest_skill_eval.hosts import startup; "
        "startup.acquire(lambda: False, slots=1, directory=Path(sys.argv[1])); "
        "print('held', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    blocked = startup.acquire(lambda: True, slots=1, directory=tmp_path)
    assert not blocked.held  # cancelled at once: the only slot was taken
    blocked.release()
    holder.kill()
    holder.wait()
    free = wait_for(
        lambda: (s := startup.acquire(lambda: True, slots=1, directory=tmp_path)).held and s,
        "the killed holder's slot to be free",
    )
    assert free.held
    free.release()


def test_waiters_are_served_in_the_order_they_came(tmp_path: Path) -> None:
    held = startup.acquire(lambda: False, slots=1, directory=tmp_path)
    order: list[str] = []
    slots: list[startup.StartupSlot] = []

    def wait(name: str) -> None:
        slot = startup.acquire(lambda: False, slots=1, directory=tmp_path)
        order.append(name)
        slots.append(slot)
        slot.release_when(lambda: False, hold_s=0.1)

    threads: list[threading.Thread] = []
    for name in ("first", "second", "third", "fourth", "fifth"):
        thread = threading.Thread(target=wait, args=(name,))
        thread.start()
        threads.append(thread)
        # Each is queued before the next one comes.
        wait_for(lambda: len(_tickets(tmp_path)) == len(threads), f"{name} to queue")
    held.release()
    for thread in threads:
        thread.join(10)
    assert order == ["first", "second", "third", "fourth", "fifth"]
    assert not _tickets(tmp_path)  # every ticket is gone with its waiter


def test_a_waiter_that_died_is_not_waited_for(tmp_path: Path) -> None:
    held = startup.acquire(lambda: False, slots=1, directory=tmp_path)
    code = (
        "import sys; from pathlib import Path; from pytest_skill_eval.hosts import startup; "
        "startup.acquire(lambda: False, slots=1, directory=Path(sys.argv[1]))"
    )
    waiter = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)])
    wait_for(lambda: len(_tickets(tmp_path)) == 1, "the other process to queue")
    waiter.kill()
    waiter.wait()
    assert len(_tickets(tmp_path)) == 1  # killed: its ticket is left behind, unlocked
    held.release()
    # One look at the queue, no waiting: had the dead waiter counted, this would not hold it.
    after = startup.acquire(lambda: True, slots=1, directory=tmp_path)
    assert after.held
    assert not _tickets(tmp_path)
    after.release()


def _tickets(directory: Path) -> list[Path]:
    return list(directory.glob(f"{startup.TICKET}*"))


def test_a_start_up_nobody_waits_on_gives_way_until_its_run_may_begin(tmp_path: Path) -> None:
    # Came first, but nobody waited on it: the start-up a worker was blocked on goes first.
    assert _who_goes_first(tmp_path, lambda: True) == ["blocked", "pre-started"]
    # Once its run may begin, it keeps its place by when it came.
    needed = threading.Event()

    def begin_its_run() -> None:
        needed.set()
        wait_for(lambda: _tickets(tmp_path)[0].name.startswith(startup.URGENT), "its promotion")

    order = _who_goes_first(tmp_path, lambda: not needed.is_set(), begin_its_run)
    assert order == ["pre-started", "blocked"]


def test_a_start_up_nobody_waits_on_never_takes_a_slot_a_blocked_one_waits_for(
    tmp_path: Path,
) -> None:
    # Two slots, both held; a pre-start queues, then a start-up a worker is blocked on. Two
    # waiters may try for the two slots, but when one frees, the pre-start must leave it alone
    # even while the other waiter is slow to look (here: it is busy for 0.5 s each time).
    held = [startup.acquire(lambda: False, slots=2, directory=tmp_path) for _ in range(2)]
    assert all(slot.held for slot in held)
    freed, looking = threading.Event(), threading.Event()
    order: list[str] = []
    taken: list[startup.StartupSlot] = []

    def slow_to_look() -> bool:
        if freed.is_set():
            looking.set()
            time.sleep(0.5)
        return False

    def wait(name: str, early: Callable[[], bool] | None, cancelled: Callable[[], bool]) -> None:
        slot = startup.acquire(cancelled, slots=2, directory=tmp_path, early=early)
        order.append(name)
        taken.append(slot)

    threads: list[threading.Thread] = []
    for name, early, cancelled in (
        ("pre-started", lambda: True, lambda: False),
        ("blocked", None, slow_to_look),
    ):
        threads.append(threading.Thread(target=wait, args=(name, early, cancelled), daemon=True))
        threads[-1].start()
        wait_for(lambda: len(_tickets(tmp_path)) == len(threads), f"the {name} one to queue")
    freed.set()
    assert looking.wait(10)  # the blocked one is busy: only the pre-start could look now
    held[0].release()
    try:
        wait_for(lambda: order, "a waiter to take the freed slot")
        assert order == ["blocked"]
    finally:
        held[1].release()  # the other waiter is never left waiting
        for thread in threads:
            thread.join(10)
        for slot in taken:
            slot.release()
    assert order == ["blocked", "pre-started"]


def test_pre_starts_never_hold_every_slot(tmp_path: Path) -> None:
    # Two slots, both free. A pre-start takes one; a second pre-start leaves the other alone
    # (its wait ends only by cancellation), kept for a start-up a worker is blocked on.
    first = startup.acquire(lambda: False, slots=2, directory=tmp_path, early=lambda: True)
    assert first.held
    looks = iter(range(10))  # its wait is called off after ten looks at the slots
    second = startup.acquire(
        lambda: next(looks, None) is None, slots=2, directory=tmp_path, early=lambda: True
    )
    assert not second.held
    # Cancelled from the start, so each of these has one look only: the slot is free at once.
    blocked = startup.acquire(lambda: True, slots=2, directory=tmp_path)
    assert blocked.held
    blocked.release()
    # Once its run may begin, a pre-start is a start-up like any other.
    begun = startup.acquire(lambda: True, slots=2, directory=tmp_path, early=lambda: False)
    assert begun.held
    begun.release()
    # The first pre-start done, the next one may load.
    first.release()
    next_one = startup.acquire(lambda: True, slots=2, directory=tmp_path, early=lambda: True)
    assert next_one.held
    next_one.release()


def test_a_pre_start_waiting_for_a_token_takes_a_slot_once_its_run_may_begin(
    tmp_path: Path,
) -> None:
    first = startup.acquire(lambda: False, slots=2, directory=tmp_path, early=lambda: True)
    assert first.held
    may_begin = threading.Event()
    taken: list[startup.StartupSlot] = []
    waiter = threading.Thread(
        target=lambda: taken.append(
            startup.acquire(
                lambda: False, slots=2, directory=tmp_path, early=lambda: not may_begin.is_set()
            )
        ),
        daemon=True,
    )
    waiter.start()
    wait_for(lambda: len(_tickets(tmp_path)) == 1, "the second pre-start to queue")
    waiter.join(0.3)
    assert waiter.is_alive()  # the other slot is free, but it has no token
    may_begin.set()  # its run may begin: it is a start-up a worker is blocked on now
    waiter.join(10)
    assert not waiter.is_alive()
    assert taken[0].held
    taken[0].release()
    first.release()


def test_a_pre_start_whose_run_began_gives_its_token_to_the_next_one(tmp_path: Path) -> None:
    # A serial run: the subject now running was pre-started and still loads when its run
    # begins; the next subject's pre-start may load on the other core.
    begun = threading.Event()
    running = startup.acquire(lambda: False, slots=2, directory=tmp_path, early=lambda: True)
    running.release_when(lambda: False, hold_s=30, early=lambda: not begun.is_set())
    looks = iter(range(10))
    assert not startup.acquire(
        lambda: next(looks, None) is None, slots=2, directory=tmp_path, early=lambda: True
    ).held
    begun.set()
    taken: list[startup.StartupSlot] = []
    waiter = threading.Thread(
        target=lambda: taken.append(
            startup.acquire(lambda: False, slots=2, directory=tmp_path, early=lambda: True)
        ),
        daemon=True,
    )
    waiter.start()
    waiter.join(10)
    try:
        assert not waiter.is_alive()
        assert taken[0].held
        assert running.held  # the running subject keeps its slot until it has loaded
    finally:
        running.release()
        for slot in taken:
            slot.release()


def test_a_pre_start_loads_beside_a_start_up_a_worker_is_blocked_on(tmp_path: Path) -> None:
    # A serial run on two cores: the running subject's host starts in one slot, the next
    # subject's pre-start in the other.
    running = startup.acquire(lambda: False, slots=2, directory=tmp_path)
    pre = startup.acquire(lambda: True, slots=2, directory=tmp_path, early=lambda: True)
    assert running.held
    assert pre.held
    running.release()
    pre.release()


def test_with_one_slot_a_pre_start_needs_no_token(tmp_path: Path) -> None:
    pre = startup.acquire(lambda: True, slots=1, directory=tmp_path, early=lambda: True)
    assert pre.held
    pre.release()
    assert not list(tmp_path.glob("early-*"))


def _who_goes_first(
    tmp_path: Path, early: Callable[[], bool], meanwhile: Callable[[], None] = lambda: None
) -> list[str]:
    """The order in which a pre-start (`early`) queued first and a start-up queued after it
    (after `meanwhile`) get the one slot."""
    held = startup.acquire(lambda: False, slots=1, directory=tmp_path)
    order: list[str] = []

    def wait(name: str, early: Callable[[], bool] | None) -> None:
        slot = startup.acquire(lambda: False, slots=1, directory=tmp_path, early=early)
        order.append(name)
        slot.release_when(lambda: False, hold_s=0.1)

    threads: list[threading.Thread] = []
    for name, how in (("pre-started", early), ("blocked", None)):
        if threads:
            meanwhile()
        threads.append(threading.Thread(target=wait, args=(name, how)))
        threads[-1].start()
        wait_for(lambda: len(_tickets(tmp_path)) == len(threads), f"the {name} one to queue")
    held.release()
    for thread in threads:
        thread.join(10)
    return order
