"""When a subject's host was spawned and when its run began: the gate of a pre-started host.

A host that takes its first prompt over stdin (Pi's rpc mode) can be spawned and configured
while its counterpart still waits on the model, so its start-up overlaps that wait. It then
holds at this gate, started but never prompted, until the evaluator opens it (its counterpart's
run is on record) or aborts it (the group was cancelled). A subject that is not pre-started
gets a gate that is open from the start. Either way the run record says when the process was
spawned (`process.spawnedAt`) and when its first prompt went out (`process.promptedAt`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..evidence.store import redact_under, utc_now
from . import startup
from .process import CancelToken, HostProcess

if TYPE_CHECKING:
    from .base import Endpoint, Launch

HELD, OPEN, ABORTED = "held", "open", "aborted"


class PromptGate:
    """Holds a host's first prompt until its run may begin; records the run's timing."""

    def __init__(self, *, held: bool = False) -> None:
        self._lock = threading.Lock()
        self._decided = threading.Event()
        self._state = HELD if held else OPEN
        self._on_open: list[tuple[Callable[..., object], tuple[Any, ...]]] = []
        self.waiting = False  # the host is started and configured, waiting at the gate
        self.opened_at: str | None = None  # when a held gate opened (None: never held)
        self.spawned_at: str | None = None
        self.prompted_at: str | None = None
        if not held:
            self._decided.set()

    @property
    def held(self) -> bool:
        """Whether the run may not begin yet (neither opened nor aborted)."""
        return self._state == HELD

    @property
    def aborted(self) -> bool:
        """Whether the run was called off before its first prompt."""
        return self._state == ABORTED

    def open(self) -> bool:
        """Let the run begin (False: it was aborted first); runs the `when_open` callbacks."""
        with self._lock:
            if self._state != HELD:
                return self._state == OPEN
            self._state = OPEN
            self.opened_at = utc_now()
            callbacks, self._on_open = self._on_open, []
        for callback, args in callbacks:
            callback(*args)
        self._decided.set()
        return True

    def abort(self) -> bool:
        """Call the run off before its first prompt (False: it had already begun)."""
        with self._lock:
            if self._state == HELD:
                self._state = ABORTED
        self._decided.set()
        return self._state == ABORTED

    def when_open(self, callback: Callable[..., object], *args: Any) -> None:
        """Call `callback(*args)` once the run may begin: now when open, else on opening."""
        with self._lock:
            if self._state == HELD:
                self._on_open.append((callback, args))
                return
            if self._state == ABORTED:
                return
        callback(*args)

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the gate to open or abort; whether it was decided."""
        return self._decided.wait(timeout)

    def spawned(self) -> None:
        """The host process was just spawned."""
        self.spawned_at = utc_now()

    def prompting(self) -> None:
        """The first prompt is going to the host now (later prompts change nothing)."""
        if self.prompted_at is None:
            self.prompted_at = utc_now()

    def ready(self, received: Callable[[], int] | None) -> Callable[[], int] | None:
        """What frees a start-up slot: the model reached, or (held) the host at the gate."""
        if received is None:
            return None
        count = received
        return lambda: count() + (1 if self.waiting else 0)

    def timing(self) -> dict[str, Any]:
        """The run record's `process` timing: a prompt in argv goes out at the spawn."""
        return {"spawnedAt": self.spawned_at, "promptedAt": self.prompted_at or self.spawned_at}


def start_when_free(
    process: HostProcess, gate: PromptGate, received: Callable[[], int] | None, cancel: CancelToken
) -> None:
    """Spawn `process` in a start-up slot (`startup.start_when_free`) and note when.

    A held host frees its slot once it waits at the gate: it never reaches the model before.
    Until its gate opens, nothing waits on it: its start-up gives way to the others.
    """
    startup.start_when_free(
        process,
        gate.ready(received),
        lambda: cancel.cancelled or gate.aborted,
        early=lambda: gate.held,
    )
    gate.spawned()


def gated(launch: Launch, gate: PromptGate | None, group_dir: Path, endpoint: Endpoint) -> Launch:
    """`launch` under `gate` (None: the open gate it has, when not pre-started), its redactor
    covering later writes under `group_dir` and the cassette once the run begins: a held run
    never redacts its counterpart's record, written before."""
    launch = launch if gate is None else dataclasses.replace(launch, gate=gate)
    launch.gate.when_open(redact_under, group_dir, launch.redactor)
    launch.gate.when_open(endpoint.redact_with, launch.redactor)
    return launch
