"""One conversation with opencode: a process per turn, each later turn `--session <id>`.

`opencode run` answers the prompt it reads on stdin and exits, so a turn settles when its
process ends well. Turn one's process is the one the evaluator started; each later turn is a
new process with the same environment, continuing the session turn one opened. A later turn's
events and stderr go to files of their own and are then appended to the run's (each already
redacted), so the evidence reads as one stream, as it does for every host.
"""

from __future__ import annotations

from typing import Protocol

from ..base import Talk
from ..dialogue import ProcessPerTurnDialogue
from ..observation import Observation, Turn
from ..process import ProcessOutcome
from ..registration import HostRegistration
from .events import EventTranslator


class Resumable(Protocol):
    """What the dialogue needs of the host: its layers and a later turn's command line."""

    @property
    def registration(self) -> HostRegistration: ...

    def resume_argv(self, session: str) -> list[str]: ...


class OpencodeDialogue(ProcessPerTurnDialogue[EventTranslator, Resumable]):
    """`--format json` events out; every prompt on stdin, one process per turn."""

    _resume = "continue"

    def __init__(self, talk: Talk, host: Resumable, skills: dict[str, str]) -> None:
        self._skills = skills  # before the base makes the translator, which reads them
        super().__init__(talk, host)

    def _translate(self) -> EventTranslator:
        return EventTranslator(self._observation, self._skills)

    def run(self) -> tuple[Observation, ProcessOutcome]:
        """Every prompt in turn, each on stdin (turn one's once the launch's gate opens); a turn
        that fails ends the conversation."""
        return self._turns(self._host.registration)

    def _later_argv(self, prompt: str) -> list[str] | None:
        session = self._translator.session_id
        return None if session is None else self._host.resume_argv(session)

    def _settled(self, number: int, turn: Turn, going: bool) -> bool:
        if not going:
            return False  # cancelled, stalled or a protocol error: the turn never settled
        if self._outcome.exit_code != 0 and turn.assistant_error is None:
            turn.assistant_error = f"opencode exited with status {self._outcome.exit_code}"
        self._observation.settle()
        return True
