"""A held host frees its start-up slot once it sleeps and its CPU has stopped rising
(`hosts.settling`)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts import dialogue as dialogue_module
from pytest_skill_eval.hosts import settling
from pytest_skill_eval.hosts.base import Launch, PromptGate, Talk
from pytest_skill_eval.hosts.dialogue import ProcessPerTurnDialogue
from pytest_skill_eval.hosts.process import CancelToken, HostProcess
from pytest_skill_eval.hosts.settling import IDLE_CPU_S, SAMPLE_S, WINDOW_S, Reading, Settling
from tests.support.processes import WAIT_S, wait_for


class _Readings:
    """A clock and a process account the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0
        self.cpu: float | None = 0.0
        self.state = "S"
        self.started = 4242

    def step(self, seconds: float, cpu: float) -> None:
        self.now += seconds
        if self.cpu is not None:
            self.cpu += cpu

    def reading(self) -> Reading | None:
        return None if self.cpu is None else Reading(self.cpu, self.state, self.started)


def _watch(readings: _Readings) -> Settling:
    return Settling(readings.reading, clock=lambda: readings.now)


def test_a_host_still_starting_has_not_settled_and_one_waiting_has() -> None:
    readings = _Readings()
    watch = _watch(readings)
    step = 0.06  # readings off the window's edge: 0.18 s is the first wider than it
    assert not watch.settled()  # one reading: no window yet
    for _ in range(20):  # a start-up, near a core's rate
        readings.step(step, 0.05)
        assert not watch.settled()
    readings.step(step, 0.0)
    assert not watch.settled()  # the reading a window back is still inside the start-up
    readings.step(step, 0.0)
    assert not watch.settled()
    readings.step(step, IDLE_CPU_S)  # flat since the last start-up reading but for one tick
    assert watch.settled()


def test_a_host_that_keeps_ticking_slowly_settles_and_one_busier_does_not() -> None:
    for rise, settles in ((IDLE_CPU_S, True), (3 * IDLE_CPU_S, False)):
        readings = _Readings()
        watch = _watch(readings)
        results = []
        for _ in range(10):
            readings.step(WINDOW_S + 0.01, rise)
            results.append(watch.settled())
        assert results[1:] == [settles] * 9, rise


def test_a_short_pause_inside_the_start_up_is_not_settling() -> None:
    readings = _Readings()
    watch = _watch(readings)
    watch.settled()
    readings.step(SAMPLE_S, 0.05)
    watch.settled()
    readings.step(WINDOW_S / 2, 0.0)  # descheduled for a moment
    assert not watch.settled()
    readings.step(SAMPLE_S, 0.05)
    assert not watch.settled()


def test_a_host_whose_cpu_cannot_be_read_counts_as_settled() -> None:
    readings = _Readings()
    readings.cpu = None
    assert _watch(readings).settled()
    assert settling.cpu_seconds(2**22 + 12345) is None  # no such process


@pytest.mark.parametrize("state", ["R", "D"])
def test_a_flat_host_that_is_runnable_or_in_io_has_not_settled(state: str) -> None:
    # Starved of CPU (runnable) or reading its executable from disk: still starting.
    readings = _Readings()
    watch = _watch(readings)
    readings.state = state
    for _ in range(10):
        readings.step(SAMPLE_S, 0.0)
        assert not watch.settled()
    readings.state = "S"
    readings.step(SAMPLE_S, 0.0)
    assert watch.settled()


def test_a_pid_that_now_names_another_process_counts_as_settled() -> None:
    readings = _Readings()
    watch = _watch(readings)
    readings.step(SAMPLE_S, 0.05)
    assert not watch.settled()
    readings.started += 1  # the host was reaped; its pid went to a new, busy process
    readings.step(SAMPLE_S, 0.05)
    assert watch.settled()


def test_a_real_process_settles_once_it_blocks_on_its_stdin() -> None:
    spin = (
        "import sys, time\n"
        "end = time.process_time() + 0.3\n"
        "while time.process_time() < end: pass\n"
        "print('waiting', flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", spin], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == "waiting\n"
            cpu = settling.cpu_seconds(child.pid)
            assert cpu is not None
            assert cpu >= 0.3 - 0.02  # the kernel's account of the spin
            watch = Settling.of(child.pid)
            deadline = time.monotonic() + 10
            while not watch.settled():
                assert time.monotonic() < deadline, "a process blocked on stdin never settled"
                time.sleep(SAMPLE_S)
        finally:
            assert child.stdin is not None
            child.stdin.close()
    assert child.returncode == 0


@pytest.mark.parametrize("rise", [0.02, 0.05])
def test_more_than_a_tick_over_the_window_is_not_settled(rise: float) -> None:
    readings = _Readings()
    watch = _watch(readings)
    watch.settled()
    for _ in range(6):
        readings.step(SAMPLE_S, rise / 3)
        assert not watch.settled()


class _Dialogue(ProcessPerTurnDialogue[Any, None]):
    def _translate(self) -> Any:
        return None


def _held(tmp_path: Path, script: str, cancel: CancelToken) -> tuple[HostProcess, _Dialogue]:
    """A started Python `script` as a pre-started host whose prompt ("{}") goes on stdin, and
    the dialogue that holds it at its gate."""
    process = HostProcess(
        argv=[sys.executable, "-c", script],
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        events_path=tmp_path / "events.jsonl",
        stderr_path=tmp_path / "stderr.log",
        interactive=False,
        takes_stdin=True,
    )
    launch = Launch(
        cwd=tmp_path,
        prompts=("{}",),
        one_shot=True,
        events_path=tmp_path / "events.jsonl",
        stderr_path=tmp_path / "stderr.log",
        gate=PromptGate(held=True),
    )
    dialogue = _Dialogue(Talk(process, cancel, launch, lambda turn: None), None)
    process.start()
    launch.gate.spawned()
    return process, dialogue


def test_a_held_host_waits_at_its_gate_only_once_it_has_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the host had spent when it was first found settled (not the slot's own limit).
    spent_when_settled: list[float | None] = []
    found = Settling.settled

    def noting(self: Settling) -> bool:
        answer = found(self)
        if answer and not spent_when_settled:
            spent_when_settled.append(settling.cpu_seconds(process.pid))
        return answer

    monkeypatch.setattr(Settling, "settled", noting)
    # The slot's own limit, after which a held host counts as waiting whether settled or not,
    # is out of the way: on a loaded machine the spin below can take seconds of wall time.
    monkeypatch.setattr(dialogue_module, "HOLD_S", WAIT_S)
    # Spins for a while as a host loading its bundle would, then blocks on its prompt.
    script = (
        "import sys, time\n"
        "end = time.process_time() + 0.5\n"
        "while time.process_time() < end: pass\n"
        "sys.stdout.write(sys.stdin.read())\n"
    )
    process, dialogue = _held(tmp_path, script, CancelToken())
    gate = dialogue._launch.gate
    prompted: list[bool] = []
    at_gate = threading.Thread(target=lambda: prompted.append(dialogue._first_prompt_at_gate()))
    at_gate.start()
    try:
        time.sleep(SAMPLE_S)
        assert not gate.waiting  # still starting: its slot is not freed at the spawn
        wait_for(lambda: gate.waiting, "a held host blocked on its prompt to settle")
        assert len(spent_when_settled) == 1  # found settled, not given up on
        spent = spent_when_settled[0]
        assert spent is not None
        assert spent >= 0.4  # not before most of its 0.5 s spin
    finally:
        gate.open()
        at_gate.join(10)
    assert prompted == [True]
    assert gate.prompted_at is not None
    process.finish(dialogue.outcome)


def test_a_run_cancelled_before_its_prompt_on_stdin_has_no_prompt_time(tmp_path: Path) -> None:
    cancel = CancelToken()
    _, dialogue = _held(tmp_path, "import sys; sys.stdin.read()", cancel)
    cancel.cancel()
    assert dialogue._first_prompt_at_gate() is False
    timing = dialogue._launch.gate.timing()
    assert timing["spawnedAt"] is not None
    assert timing["promptedAt"] is None


def test_a_held_host_that_ended_before_its_gate_opened_is_never_prompted(tmp_path: Path) -> None:
    process, dialogue = _held(tmp_path, "pass", CancelToken())
    assert process.wait(10) == 0  # it ended while held
    gate = dialogue._launch.gate
    gate.open()
    assert dialogue._first_prompt_at_gate() is False
    assert gate.prompted_at is None  # so its pre-start is discarded and the variant runs afresh
