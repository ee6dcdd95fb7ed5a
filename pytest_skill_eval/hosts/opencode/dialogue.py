"""One conversation with opencode: a process per turn, each later turn `--session <id>`.

`opencode run` answers one prompt and exits, so a turn settles when its process ends well. Turn
one's process is the one the evaluator started; each later turn is a new process with the same
environment, continuing the session turn one opened. A later turn's events and stderr go to
files of their own and are then appended to the run's (each already redacted), so the evidence
reads as one stream, as it does for every host.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ...evidence.redact import Counts, add
from ..dialogue import StreamDialogue
from ..layers import SystemLayerError, kept_out
from ..observation import Observation, Turn
from ..process import CancelToken, HostProcess, ProcessOutcome
from ..registration import HostRegistration
from .events import EventTranslator


class Resumable(Protocol):
    """What the dialogue needs of the host: its layers and a later turn's command line."""

    @property
    def registration(self) -> HostRegistration: ...

    def resume_argv(self, session: str, prompt: str) -> list[str]: ...


class OpencodeDialogue(StreamDialogue[EventTranslator]):
    """`--format json` events out; every prompt in argv, one process per turn."""

    def __init__(
        self,
        process: HostProcess,
        cancel: CancelToken,
        prompts: tuple[str, ...],
        turn_file: Path | None,
        after_turn: Callable[[Turn], None],
        host: Resumable,
        skills: dict[str, str],
    ) -> None:
        super().__init__(process, cancel)
        self._prompts = prompts
        self._turn_file = turn_file
        self._after_turn = after_turn
        self._host = host
        self._events, self._stderr = process.events_path, process.stderr_path
        self._translator = EventTranslator(self._observation, skills)
        self._counts: dict[str, Counts] = {}
        self._cut: list[OSError | None] = [None, None]  # events, stderr: the first failed write

    def run(self) -> tuple[Observation, ProcessOutcome]:
        """Every prompt in turn; a turn that fails ends the conversation."""
        obs = self._observation
        self._process.close_stdin()  # opencode takes its prompt from argv
        for number, prompt in enumerate(self._prompts, start=1):
            if number > 1 and not self._next_process(number):
                break
            if self._turn_file is not None:
                self._turn_file.write_text(str(number), encoding="utf-8")
            turn = obs.begin_turn(number, prompt, prompt)
            turn.prompt_accepted = True
            going = self._pump(lambda: self._ended)
            self._outcome = self._process.finish(self._outcome)
            self._collect(number)
            if not going:
                break  # cancelled, stalled or a protocol error: the turn never settled
            if self._outcome.exit_code != 0 and turn.assistant_error is None:
                code = self._outcome.exit_code
                turn.assistant_error = f"opencode exited with status {code}"
            obs.settle()
            self._after_turn(turn)
            if turn.assistant_error is not None:
                break  # later turns would build on a failed one
        for turn in obs.turns:
            turn.finish()
        return obs, self._outcome

    def _next_process(self, number: int) -> bool:
        """Start turn `number`'s process on the same session; False when it cannot go on."""
        obs, session = self._observation, self._translator.session_id
        if self._cancel.cancelled:
            return False
        if session is None:
            obs.protocol_error(
                "process-error", message=f"turn {number - 1} left no opencode session to continue"
            )
            return False
        try:
            # Each turn is a new process, which reads the managed configuration again.
            kept_out(self._host.registration.display_name, self._host.registration.system_layers)
        except SystemLayerError as error:
            obs.protocol_error("system-layer", message=str(error))
            return False
        directory = self._events.parent
        process = HostProcess(
            argv=self._host.resume_argv(session, self._prompts[number - 1]),
            env=self._process.env,
            cwd=self._process.cwd,
            events_path=directory / f"events.turn{number}.jsonl",
            stderr_path=directory / f"stderr.turn{number}.log",
            interactive=False,
            no_progress_s=self._process.no_progress_s,
            redactor=self._process.redactor,
            home=self._process.home,
        )
        try:
            process.start()
        except OSError as failure:
            obs.protocol_error("process-error", message=f"could not continue opencode: {failure}")
            return False
        process.close_stdin()
        self._process, self._outcome, self._ended = process, ProcessOutcome(), False
        return True

    def _collect(self, number: int) -> None:
        """A later turn's events and stderr appended to the run's own files, and every
        process's redaction counts kept under those files' names."""
        names = {
            self._process.events_path.name: self._events.name,
            self._process.stderr_path.name: self._stderr.name,
        }
        for name, counts in self._process.redactions.items():
            add(self._counts.setdefault(names.get(name, name), {}), counts)
        self._process.redactions = {name: dict(c) for name, c in self._counts.items()}
        # A log cut short in any turn (a full disk) stays cut: the last process carries that.
        cut = [self._process.events_error, self._process.stderr_error]
        parts = [
            (self._process.events_path, self._events),
            (self._process.stderr_path, self._stderr),
        ]
        for index, (part, whole) in enumerate(parts if number > 1 else []):
            try:
                with open(whole, "ab") as sink:
                    sink.write(part.read_bytes())
                part.unlink()
            except OSError as failure:
                message = f"could not keep turn {number}'s {part.name}: {failure}"
                self._observation.protocol_error("operation-failed", message=message)
                cut[index] = cut[index] or failure
        self._cut = [old or new for old, new in zip(self._cut, cut, strict=True)]
        self._process.events_error, self._process.stderr_error = self._cut
