"""Start-up slots: one host start-up per slot at a time, released when the model is reached."""

from __future__ import annotations

import subprocess
import sys
import threading
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
