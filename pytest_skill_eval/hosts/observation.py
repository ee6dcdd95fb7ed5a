"""What was observed of a subject: turns, transcript, tool activity, usage, errors (both modes)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from ..definitions.models import COMMAND_TOOL
from ..evidence.observed import (
    Delivery,
    ObservedModel,
    ParseError,
    ToolCall,
    TurnWorkspace,
    Usage,
    UsageCost,
)
from .command_results import exit_code_of

UsageField = Literal["input", "output", "cacheRead", "cacheWrite"]
CostField = Literal["input", "output", "cacheRead", "cacheWrite", "total"]
USAGE_FIELDS: tuple[UsageField, ...] = ("input", "output", "cacheRead", "cacheWrite")
COST_FIELDS: tuple[CostField, ...] = ("input", "output", "cacheRead", "cacheWrite", "total")


def _number(value: object) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def text_or_none(value: object) -> str | None:
    """A host's id or name as recorded: a string, else None."""
    return value if isinstance(value, str) else None


def merge_usage(total: Usage | None, usage: object) -> Usage | None:
    """Sum a message's usage (`input`, `output`, `cacheRead`, `cacheWrite`, `cost`) into a
    running total (missing values count as 0)."""
    if not isinstance(usage, dict):
        return total
    merged: Usage = total or {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    for key in USAGE_FIELDS:
        merged[key] = merged[key] + _number(usage.get(key))
    raw_cost = usage.get("cost")
    cost: dict[object, object] = raw_cost if isinstance(raw_cost, dict) else {}
    merged_cost: UsageCost = merged["cost"]
    for name in COST_FIELDS:
        merged_cost[name] = round(merged_cost[name] + _number(cost.get(name)), 12)
    return merged


def sum_usage(usages: list[Usage | None]) -> Usage | None:
    """Sum per-turn usage into a run total; None when no turn carried usage."""
    total: Usage | None = None
    for usage in usages:
        if usage is not None:
            total = merge_usage(total, {**usage})
    return total


@dataclass
class Turn:
    """One declared prompt and everything observed while the subject worked on it."""

    turn: int
    prompt: str
    delivered_prompt: str
    transcript_start: int
    started: float = field(default_factory=time.monotonic)
    response: str = ""
    transcript_end: int = 0
    reads: list[str] = field(default_factory=list)
    tool_activity: list[ToolCall] = field(default_factory=list)
    prompt_accepted: bool = False
    usage: Usage | None = None
    model_calls: int = 0  # assistant replies observed (hosts that report each one)
    assistant_error: str | None = None
    settled: bool = False
    wall_time_ms: int | None = None
    workspace: TurnWorkspace | None = None

    def observed(self) -> bool:
        """Whether anything at all happened in this turn (kept even when interrupted)."""
        return bool(
            self.prompt_accepted
            or self.settled
            or self.transcript_end > self.transcript_start
            or self.reads
            or self.tool_activity
            or self.usage
            or self.response
            or self.assistant_error
        )

    def finish(self) -> None:
        """Stamp the turn's wall time."""
        if self.wall_time_ms is None:
            self.wall_time_ms = round((time.monotonic() - self.started) * 1000)


@dataclass
class Observation:
    """Evidence gathered from a host's event stream, in host-neutral form."""

    turns: list[Turn] = field(default_factory=list)
    transcript: list[dict[str, object]] = field(default_factory=list)  # the host's messages
    parse_errors: list[ParseError] = field(default_factory=list)
    # Each with its `reason` and the details the failure has (open: they are the host's).
    protocol_errors: list[dict[str, object]] = field(default_factory=list)
    model: ObservedModel | None = None
    delivery: Delivery | None = None
    _pending_tools: dict[str, ToolCall] = field(default_factory=dict)

    @property
    def current(self) -> Turn | None:
        """The turn in progress, if any."""
        if self.turns and not self.turns[-1].settled:
            return self.turns[-1]
        return None

    def begin_turn(self, number: int, prompt: str, delivered: str) -> Turn:
        """Start recording a new turn."""
        turn = Turn(number, prompt, delivered, transcript_start=len(self.transcript))
        turn.transcript_end = turn.transcript_start
        self.turns.append(turn)
        return turn

    def protocol_error(self, reason: str, **details: object) -> None:
        """Record a protocol error (any makes the run infrastructure-failed)."""
        self.protocol_errors.append({"reason": reason, **details})

    def tool_started(self, call_id: str | None, name: str | None, args: object) -> None:
        """A tool call began in the current turn."""
        turn = self.current
        if turn is None:
            return
        activity: ToolCall = {
            "toolCallId": call_id,
            "toolName": name,
            "args": args,
            "completed": False,
            "isError": None,
        }
        turn.tool_activity.append(activity)
        self._pending_tools[str(call_id)] = activity

    def tool_ended(self, call_id: object, is_error: bool, output: object = None) -> ToolCall | None:
        """A tool call ended; returns its activity record (None when it never began).

        `output` is the result as the host reports it: a declared command's exit code is read
        from it into `exitCode` (null when a signal or the timeout ended the command; absent
        when the host showed no status line).
        """
        activity = self._pending_tools.pop(str(call_id), None)
        if activity is not None:
            activity["completed"] = True
            activity["isError"] = is_error
            found, code = exit_code_of(output)
            if activity["toolName"] == COMMAND_TOOL and found and not is_error:
                activity["exitCode"] = code
        return activity

    def delivery_unavailable(self, target: Path | None) -> None:
        """The host cannot hand the `target` skill over explicitly (none when None)."""
        if target is not None:
            self.delivery = {"kind": "unavailable", "turn": 1, "targetPath": str(target)}

    def read_succeeded(self, path: str) -> None:
        """The subject read `path` (as it named it) in the current turn."""
        if self.current is not None:
            self.current.reads.append(path)

    def read_by(
        self,
        activity: ToolCall,
        skills: Mapping[str, Path],
        skill: str,
        *,
        cwd: Path | None = None,
    ) -> None:
        """What a successful call with arguments read: a `read` call's `file_path` (under `cwd`
        when it is given), or the file of the skill a `skill` call names by its `skill`
        argument."""
        args = activity.get("args")
        if not isinstance(args, Mapping):
            return
        path = args.get("file_path")
        if activity.get("toolName") == "read" and isinstance(path, str):
            self.read_succeeded(path if cwd is None else str(cwd / path))
        elif activity.get("toolName") == "skill":
            found = skills.get(str(args.get(skill)))
            if found is not None:
                self.read_succeeded(str(found))

    def message(self, message: dict[str, object]) -> Turn | None:
        """A finished transcript message of the current turn; returns that turn."""
        turn = self.current
        if turn is None:
            return None
        self.transcript.append(message)
        turn.transcript_end = len(self.transcript)
        return turn

    def assistant_reply(
        self,
        turn: Turn,
        text: str,
        usage: object,
        model: ObservedModel | None,
        error: str | None,
    ) -> None:
        """An assistant message: its text, usage, the model that answered, a failure."""
        turn.response = text
        turn.model_calls += 1
        turn.usage = merge_usage(turn.usage, usage)
        if model is not None:
            self.model = model
        if error is not None and turn.assistant_error is None:
            turn.assistant_error = error

    def settle(self) -> bool:
        """The host says the current turn is over; False when no turn was in progress."""
        turn = self.current
        if turn is None:
            return False
        turn.settled = True
        turn.finish()
        return True

    # -- results ---------------------------------------------------------------------------

    def observed_turns(self) -> list[Turn]:
        """Turns to keep: every settled turn and an interrupted one that observed anything."""
        return [t for t in self.turns if t.settled or t.observed()]

    def settled(self, prompts: int) -> bool:
        """Every declared prompt was sent and settled."""
        return len(self.turns) == prompts and all(t.settled for t in self.turns)

    def assistant_error(self) -> str | None:
        """The first turn's assistant error."""
        return next((t.assistant_error for t in self.turns if t.assistant_error), None)


@dataclass
class SkillReadTranslator:
    """Applies a host's events to an observation, with the session they belong to.

    `skills` maps each visible skill's name, and every path its SKILL.md is known by, to the
    snapshot path reads are recorded under.
    """

    # The host's file-read tool and its path argument; its skill tool's skill-name argument.
    read_tool: ClassVar[tuple[str, str]] = ("read", "path")
    skill_argument: ClassVar[str] = "name"

    obs: Observation
    skills: Mapping[str, str]
    session_id: str | None = None

    def tool_succeeded(self, name: str, args: object) -> None:
        """A call of tool `name` with `args` that succeeded: a read when it read a file (of the
        snapshot when it is a SKILL.md's) or called the skill tool (of that skill's snapshot)."""
        if not isinstance(args, dict):
            return
        path, skill = args.get(self.read_tool[1]), args.get(self.skill_argument)
        if name == self.read_tool[0] and isinstance(path, str):
            self.obs.read_succeeded(self.skills.get(path, path))
        elif name == "skill" and isinstance(skill, str) and skill in self.skills:
            self.obs.read_succeeded(self.skills[skill])


def canonical_reads(raw_paths: list[str], workspace: Path) -> list[str]:
    """Resolve read paths after the run: `@` stripped, relative to the workspace, realpath'd."""
    seen: dict[str, None] = {}
    for raw in raw_paths:
        path = raw[1:] if raw.startswith("@") else raw
        candidate = Path(path) if os.path.isabs(path) else workspace / path
        try:
            resolved = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            continue  # deleted or unresolvable: not a readable fact any more
        seen.setdefault(str(resolved), None)
    return list(seen)
