"""Talking to Pi: one-shot `--mode json` and persistent `--mode rpc` conversations."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import PromptGate
from ..observation import Observation, Turn
from ..process import CancelToken, EndOfStream, Frame, HostProcess, ProcessOutcome
from .events import apply_event

TICK_S = 0.25


class _Stop(Exception):
    """Internal: the conversation cannot go on (reason already recorded)."""


@dataclass
class Conversation:
    """Pumps Pi's frames into an Observation, with cancellation and the no-progress watchdog."""

    process: HostProcess
    cancel: CancelToken
    observation: Observation = field(default_factory=Observation)
    outcome: ProcessOutcome = field(default_factory=ProcessOutcome)
    ended: bool = False
    _next_id: int = 0
    _responses: dict[str, dict[str, Any]] = field(default_factory=dict)
    _pending: dict[str, str] = field(default_factory=dict)

    def _stop(self, reason: str) -> _Stop:
        self.process.terminate(self.outcome, reason)
        return _Stop(reason)

    def pump(self, done: Callable[[], bool]) -> None:
        """Handle frames until `done()` holds; raises _Stop on cancel, watchdog, EOF, errors."""
        while not done():
            if self.cancel.cancelled:
                raise self._stop("cancelled")
            if self.observation.protocol_errors:
                raise self._stop("protocol-error")
            if self.ended:
                raise _Stop("exited")
            frame = self.process.next_frame(TICK_S)
            if frame is None:
                if self.process.stalled():
                    raise self._stop("no-progress-watchdog")
                continue
            self._apply(frame)

    def _apply(self, frame: Frame | EndOfStream) -> None:
        if isinstance(frame, EndOfStream):
            self.ended = True
            if frame.error:
                self.observation.parse_errors.append({"line": None, "reason": frame.error})
                self.observation.protocol_error(frame.error)
            return
        if frame.event is None:
            self.observation.parse_errors.append({"line": frame.line, "reason": frame.error})
            if self.process.interactive or frame.error == "incomplete-frame-limit":
                # RPC records must be exact; a bad frame means the stream cannot be trusted.
                self.observation.protocol_error(frame.error or "invalid-record", line=frame.line)
            return
        event = frame.event
        if event.get("type") == "response":
            self._response(event)
        else:
            apply_event(self.observation, event)

    def _response(self, event: dict[str, Any]) -> None:
        request_id = event.get("id")
        command = self._pending.pop(str(request_id), None) if request_id is not None else None
        if command is None:
            self.observation.protocol_error("unexpected-response", response=event)
            return
        if event.get("command") != command:
            self.observation.protocol_error("response-command-mismatch", response=event)
            return
        self._responses[str(request_id)] = event

    def request(self, command: str, **fields: Any) -> dict[str, Any]:
        """Send an RPC command and wait for its response; a failure stops the conversation."""
        self._next_id += 1
        request_id = f"request-{self._next_id}"
        self._pending[request_id] = command
        try:
            self.process.send({"id": request_id, "type": command, **fields})
        except OSError as error:
            self.observation.protocol_error("process-error", message=f"stdin closed: {error}")
            raise self._stop("protocol-error") from error
        self.pump(lambda: request_id in self._responses)
        response = self._responses.pop(request_id)
        if response.get("success") is not True:
            self.observation.protocol_error(
                "operation-failed", command=command, error=response.get("error")
            )
            raise self._stop("protocol-error")
        return response

    def await_gate(self, gate: PromptGate) -> None:
        """A pre-started Pi, configured, waits here (unprompted) until its run may begin."""
        gate.waiting = True
        while not gate.wait(TICK_S):
            if self.cancel.cancelled:
                raise self._stop("cancelled")
        if gate.aborted:
            raise self._stop("cancelled")
        if gate.opened_at is not None and self.process.wait(0) is not None:
            raise _Stop("exited")  # it ended while held: never prompted, so discarded
        self.process.progressed()  # the wait was the evaluator's, never a stall of the host

    def drain(self) -> None:
        """Read what is left after stdin closed, until Pi's stdout ends."""
        with contextlib.suppress(_Stop):
            self.pump(lambda: self.ended)


def resolve_target_command(commands: Any, target: Path) -> tuple[str | None, str | None]:
    """Find the `/skill:<name>` command whose SKILL.md is the snapshotted target."""
    matches: dict[str, set[str]] = {}
    for command in commands if isinstance(commands, list) else []:
        if not isinstance(command, dict) or command.get("source") != "skill":
            continue
        name = command.get("name")
        raw_info = command.get("sourceInfo")
        info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
        raw = command.get("path") or info.get("path")
        if not isinstance(name, str) or not isinstance(raw, str):
            continue
        try:
            real = os.path.realpath(raw)
        except OSError:
            continue
        matches.setdefault(name, set()).add(real)
    names = [name for name, paths in matches.items() if str(target) in paths]
    if not names:
        return None, f"Pi did not register the exact target skill command: {target}"
    name = names[0]
    if len(matches[name]) > 1 or len(names) > 1:
        return None, f"Pi registered an ambiguous target skill command: {name}"
    return name, None


def run_one_shot(conversation: Conversation, prompt: str) -> tuple[Observation, ProcessOutcome]:
    """`--mode json`: the prompt is in argv; read events until Pi exits."""
    obs = conversation.observation
    obs.begin_turn(1, prompt, prompt).prompt_accepted = True
    with contextlib.suppress(_Stop):
        conversation.pump(lambda: conversation.ended)
    outcome = conversation.process.finish(conversation.outcome)
    for turn in obs.turns:
        turn.finish()
    return obs, outcome


def run_turns(
    conversation: Conversation,
    prompts: Sequence[str],
    *,
    target: Path | None,
    turn_file: Path | None,
    after_turn: Callable[[Turn], None],
    gate: PromptGate | None = None,
) -> tuple[Observation, ProcessOutcome]:
    """`--mode rpc`: configure Pi, deliver the target on turn one, send each prompt once settled.

    A `gate` holds the first prompt (Pi started and configured) until the run may begin.
    """
    obs = conversation.observation
    obs.delivery = {"kind": "unavailable", "turn": 1, "targetPath": str(target) if target else None}
    if gate is not None:
        gate.deferred = True  # the first prompt follows Pi's set-up commands
    try:
        conversation.request("set_auto_retry", enabled=False)
        conversation.request("set_auto_compaction", enabled=False)
        command: str | None = None
        if target is not None:
            response = conversation.request("get_commands")
            raw_data = response.get("data")
            data: dict[str, Any] = raw_data if isinstance(raw_data, dict) else {}
            command, problem = resolve_target_command(data.get("commands"), target)
            if problem:
                obs.protocol_error("operation-failed", message=problem)
                raise conversation._stop("protocol-error")
            obs.delivery = {
                "kind": "explicit-skill-command",
                "turn": 1,
                "targetPath": str(target),
                "command": command,
            }
        else:
            obs.delivery = {"kind": "natural-prompt", "turn": 1, "targetPath": None}
        if gate is not None:
            conversation.await_gate(gate)
        for number, prompt in enumerate(prompts, start=1):
            delivered = f"/{command} {prompt}" if command and number == 1 else prompt
            if turn_file is not None:
                turn_file.write_text(str(number), encoding="utf-8")
            turn = obs.begin_turn(number, prompt, delivered)
            if gate is not None:
                gate.prompting()
            conversation.request("prompt", message=delivered)
            turn.prompt_accepted = True
            conversation.pump(lambda turn=turn: turn.settled)  # type: ignore[misc]
            after_turn(turn)
            if turn.assistant_error is not None:
                break  # later turns would build on a failed one
    except _Stop:
        pass
    conversation.process.close_stdin()
    conversation.drain()
    outcome = conversation.process.finish(conversation.outcome)
    for turn in obs.turns:
        turn.finish()
    return obs, outcome
