"""One conversation with Copilot CLI: a process per turn, each later turn `--resume <id>`.

`copilot -p` answers one prompt and exits, so a turn settles when its process ends well. Each
later turn is a new process with the same environment, resuming the session turn one opened;
its events and stderr are appended to the run's. Each process writes the session's running
token totals to a usage file of its own as it ends: the turn's usage is what they grew by.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from ..base import Talk
from ..dialogue import ProcessPerTurnDialogue
from ..observation import Observation, Turn, merge_usage
from ..process import ProcessOutcome
from ..registration import HostRegistration
from .events import EventTranslator, session_usage, turn_usage


class Resumable(Protocol):
    """What the dialogue needs of the host: its layers, a later turn's command line and where
    each turn's process writes its usage."""

    @property
    def registration(self) -> HostRegistration: ...

    def resume_argv(self, session: str, prompt: str, number: int) -> list[str]: ...

    def usage_file(self, number: int) -> Path: ...


class CopilotCliDialogue(ProcessPerTurnDialogue[EventTranslator, Resumable]):
    """`--output-format json` events out; every prompt in argv, one process per turn."""

    def __init__(self, talk: Talk, host: Resumable, skills: dict[str, str]) -> None:
        self._skills = skills  # before the base makes the translator, which reads them
        self._totals: dict[str, int] = {}
        self._number = 1
        super().__init__(talk, host)

    def _translate(self) -> EventTranslator:
        return EventTranslator(self._observation, self._skills)

    def run(self) -> tuple[Observation, ProcessOutcome]:
        """Every prompt in turn; a turn that fails ends the conversation."""
        self._process.close_stdin()  # Copilot CLI takes its prompt from argv
        return self._turns(self._host.registration)

    def _later_argv(self, prompt: str) -> list[str] | None:
        session = self._translator.session_id
        self._number += 1
        return None if session is None else self._host.resume_argv(session, prompt, self._number)

    def _settled(self, number: int, turn: Turn, going: bool) -> bool:
        if not going:
            return False  # cancelled, stalled or a protocol error: the turn never settled
        if self._outcome.exit_code != 0 and turn.assistant_error is None:
            turn.assistant_error = f"Copilot CLI exited with status {self._outcome.exit_code}"
        self._count_usage(turn, self._host.usage_file(number))
        self._observation.settle()
        return True

    def _count_usage(self, turn: Turn, path: Path) -> None:
        try:
            totals = session_usage(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return  # the process wrote none: the turn's usage stays unknown
        turn.usage = merge_usage(turn.usage, turn_usage(self._totals, totals))
        self._totals = totals
