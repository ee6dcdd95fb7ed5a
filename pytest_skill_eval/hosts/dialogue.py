"""What the hosts that print one JSON event a line share: frames into a translator, stopped by
cancellation, a protocol error, the end of the stream or the no-progress watchdog; and, for
hosts that continue a session in a new process each turn, starting those and keeping their
logs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..evidence.redact import Counts, add
from .layers import SystemLayerError, kept_out
from .observation import Observation, Turn
from .process import EndOfStream, Frame, HostProcess, ProcessOutcome
from .settling import SAMPLE_S, Settling
from .startup import HOLD_S
from .workspace_layers import WorkspaceLayerError, unchanged

if TYPE_CHECKING:
    from .base import Declared, Talk

TICK_S = 0.25


class Translator(Protocol):
    """Turns one host event into the neutral observation."""

    def apply(self, event: dict[str, Any]) -> bool: ...


T = TypeVar("T", bound=Translator)
H = TypeVar("H")


class StreamDialogue(Generic[T]):
    """The state and pump a JSON-lines dialogue needs; a host adds its turns and translator."""

    _translator: T

    def __init__(self, talk: Talk) -> None:
        self._process = talk.process
        self._cancel = talk.cancel
        self._launch = talk.launch
        self._after_turn = talk.after_turn
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

    def _begin_turn(self, number: int, prompt: str, delivered: str) -> Turn:
        """Turn `number` begun (`delivered`: its prompt as the host gets it), the launch's turn
        file saying which turn runs now."""
        if self._launch.turn_file is not None:
            self._launch.turn_file.write_text(str(number), encoding="utf-8")
        return self._observation.begin_turn(number, prompt, delivered)

    def _finish(self) -> tuple[Observation, ProcessOutcome]:
        """The process ended (waited for, stopped if it will not) and every turn closed."""
        outcome = self._process.finish(self._outcome)
        for turn in self._observation.turns:
            turn.finish()
        return self._observation, outcome

    def _until_gate(self) -> bool:
        """Hold the host's first prompt, which goes to its stdin, until the launch's gate opens
        (a pre-started host has started meanwhile and waits for it); False when the run was
        called off first (its process then stopped and reaped)."""
        gate = self._launch.gate
        gate.deferred = True
        # Held (pre-started): its start-up gives way until the gate opens, and frees its slot
        # once it has settled (it sleeps, its CPU no longer rising: it waits for its prompt), or
        # once the slot's own limit has passed.
        settling = Settling.of(self._process.pid) if gate.held else None
        give_up = time.monotonic() + HOLD_S
        while not gate.wait(TICK_S if settling is None else SAMPLE_S):
            if self._cancel.cancelled:
                break
            if settling is not None and (settling.settled() or time.monotonic() > give_up):
                gate.waiting, settling = True, None
        if gate.aborted or self._cancel.cancelled:
            self._process.terminate(self._outcome, "cancelled")
            self._outcome = self._process.finish(self._outcome)
            return False
        if gate.opened_at is not None and self._process.wait(0) is not None:
            # It ended while it was held: never prompted, so the pre-start is discarded and the
            # variant runs as usual (`run/prestart.py`).
            self._outcome = self._process.finish(self._outcome)
            return False
        self._process.progressed()  # the wait was the evaluator's, never a stall of the host
        return True

    def _layers_kept(self, number: int, registration: Declared) -> bool:
        """Before turn `number` (a later one): no system layer has appeared, and no workspace
        layer is the subject's since the first turn began; False (a protocol error recorded)
        when one is. A host reads them as each process starts, and may again as a turn does."""
        host = registration.display_name
        try:
            kept_out(host, registration.system_layers)
            start = self._launch.layers_at_start
            if start is not None:
                unchanged(host, self._launch.cwd, registration.workspace_layers, start, number)
        except SystemLayerError as error:
            self._observation.protocol_error("system-layer", message=str(error))
            return False
        except WorkspaceLayerError as error:
            self._observation.protocol_error("workspace-layer", message=str(error))
            return False
        return True

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


class ProcessPerTurnDialogue(StreamDialogue[T], Generic[T, H]):
    """A dialogue whose later turns each start a new process (a `resume` command line) with
    the first one's environment; their events and stderr are appended to the run's files.
    `host` (an `H`) gives the later turns' command lines; `after_turn` is told of each turn."""

    # How messages name what a later turn continues, and continuing it.
    _session = "session"
    _resume = "resume"

    def __init__(self, talk: Talk, host: H) -> None:
        super().__init__(talk)
        self._host = host
        self._translator = self._translate()
        self._counts: dict[str, Counts] = {}
        self._cut: list[OSError | None] = [None, None]  # events, stderr: the first failed write

    def _translate(self) -> T:
        """This host's translator into the observation, made once the launch and host are kept
        (each host reads its events with its own)."""
        raise NotImplementedError

    def _later_argv(self, prompt: str) -> list[str] | None:
        """A later turn's command line, continuing what the turns before left (None: they left
        nothing to continue)."""
        raise NotImplementedError

    def _settled(self, number: int, turn: Turn, going: bool) -> bool:
        """Whether the conversation goes on after turn `number`: it went on and settled."""
        return going and turn.settled

    def _turns(self, registration: Declared) -> tuple[Observation, ProcessOutcome]:
        """Every prompt in turn on the host `registration` declares, each later one in a new
        process; a turn that fails or does not settle ends the conversation (later turns would
        build on it). A host that reads its prompt on stdin (`prompt_on_stdin`) gets each one
        there, turn one's once the launch's gate opens."""
        on_stdin = registration.prompt_on_stdin
        if on_stdin and not self._first_prompt_at_gate():
            return self._observation, self._outcome
        for number, prompt in enumerate(self._launch.prompts, start=1):
            stdin = prompt if on_stdin else None
            if number > 1 and not self._next_process(
                number, self._later_argv(prompt), registration, stdin
            ):
                break
            turn, going = self._take_turn(number, prompt)
            if not self._settled(number, turn, going):
                break
            self._after_turn(turn)
            if turn.assistant_error is not None:
                break
        for turn in self._observation.turns:
            turn.finish()
        return self._observation, self._outcome

    def _first_prompt_at_gate(self) -> bool:
        """Turn one's prompt on the first process's stdin once the launch's gate opens; False
        when the run was called off first."""
        if not self._until_gate():
            return False
        self._launch.gate.prompting()
        self._process.feed(self._launch.prompts[0].encode("utf-8"))
        return True

    def _next_process(
        self,
        number: int,
        argv: list[str] | None,
        registration: Declared,
        stdin: str | None = None,
    ) -> bool:
        """Start `argv` for turn `number` (None: the last turn left nothing to resume) on the
        host `registration` declares, `stdin` written to it; False when the conversation cannot
        go on."""
        obs, host = self._observation, registration.display_name
        if self._cancel.cancelled:
            return False
        if self._outcome.exit_code not in (0, None) or argv is None:
            obs.protocol_error(
                "process-error",
                message=f"turn {number - 1} left no {host} {self._session} to {self._resume}",
            )
            return False
        if not self._layers_kept(number, registration):
            return False
        directory = self._launch.events_path.parent
        process = HostProcess(
            argv=argv,
            env=self._process.env,
            cwd=self._launch.cwd,
            events_path=directory / f"events.turn{number}.jsonl",
            stderr_path=directory / f"stderr.turn{number}.log",
            interactive=False,
            no_progress_s=self._launch.no_progress_s,
            redactor=self._launch.redactor,
            guardian=self._process.guardian,
            takes_stdin=stdin is not None,
        )
        try:
            process.start()
        except OSError as failure:
            obs.protocol_error(
                "process-error", message=f"could not {self._resume} {host}: {failure}"
            )
            return False
        if stdin is not None:
            process.feed(stdin.encode("utf-8"))
        self._process, self._outcome, self._ended = process, ProcessOutcome(), False
        return True

    def _take_turn(self, number: int, prompt: str) -> tuple[Turn, bool]:
        """Turn `number` in the current process, its prompt already given (in its command line,
        or on its stdin): its events until the process ends, its logs kept. The turn, and False
        when the conversation cannot go on."""
        turn = self._begin_turn(number, prompt, prompt)
        turn.prompt_accepted = True
        going = self._pump(lambda: self._ended)
        self._outcome = self._process.finish(self._outcome)
        self._collect(number)
        return turn, going

    def _collect(self, number: int) -> None:
        """A later turn's events and stderr appended to the run's own files (already redacted),
        and every process's redaction counts kept under those files' names."""
        names = {
            self._process.events_path.name: self._launch.events_path.name,
            self._process.stderr_path.name: self._launch.stderr_path.name,
        }
        for name, counts in self._process.redactions.items():
            add(self._counts.setdefault(names.get(name, name), {}), counts)
        self._process.redactions = {name: dict(c) for name, c in self._counts.items()}
        # A log cut short in any turn (a full disk) stays cut: the last process carries that.
        cut = [self._process.events_error, self._process.stderr_error]
        later_turn = [
            (self._process.events_path, self._launch.events_path),
            (self._process.stderr_path, self._launch.stderr_path),
        ]
        for index, (part, whole) in enumerate(later_turn if number > 1 else []):
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
