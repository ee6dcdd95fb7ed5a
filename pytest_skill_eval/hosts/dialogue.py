"""What the hosts that print one JSON event a line share: frames into a translator, stopped by
cancellation, a protocol error, the end of the stream or the no-progress watchdog."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from .observation import Observation
from .process import CancelToken, EndOfStream, Frame, HostProcess, ProcessOutcome

TICK_S = 0.25


class Translator(Protocol):
    """Turns one host event into the neutral observation."""

    def apply(self, event: dict[str, Any]) -> bool: ...


T = TypeVar("T", bound=Translator)


class StreamDialogue(Generic[T]):
    """The state and pump a JSON-lines dialogue needs; a host adds its turns and translator."""

    _translator: T

    def __init__(self, process: HostProcess, cancel: CancelToken) -> None:
        self._process = process
        self._cancel = cancel
        self._observation = Observation()
        self._outcome = ProcessOutcome()
        self._ended = False

    @property
    def process(self) -> HostProcess:
        """The process currently running."""
        return self._process

    @property
    def observation(self) -> Observation:
        """What was observed so far."""
        return self._observation

    @property
    def outcome(self) -> ProcessOutcome:
        """How the current process is ending."""
        return self._outcome

    def _pump(self, done: Callable[[], bool]) -> bool:
        """Apply frames until `done()`; False when the conversation cannot go on."""
        obs = self._observation
        while not done():
            if self._cancel.cancelled:
                self._process.terminate(self._outcome, "cancelled")
                return False
            if obs.protocol_errors:
                self._process.terminate(self._outcome, "protocol-error")
                return False
            if self._ended:
                return False
            frame = self._process.next_frame(TICK_S)
            if frame is None:
                if self._process.stalled():
                    self._process.terminate(self._outcome, "no-progress-watchdog")
                    return False
                continue
            self._apply(frame)
        return True

    def _apply(self, frame: Frame | EndOfStream) -> None:
        obs = self._observation
        if isinstance(frame, EndOfStream):
            self._ended = True
            if frame.error:
                obs.parse_errors.append({"line": None, "reason": frame.error})
                obs.protocol_error(frame.error)
            return
        if frame.event is None:
            obs.parse_errors.append({"line": frame.line, "reason": frame.error})
            obs.protocol_error(frame.error or "invalid-record", line=frame.line)
            return
        self._translator.apply(frame.event)
