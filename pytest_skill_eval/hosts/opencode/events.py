"""`opencode run --format json` events translated into the neutral observation.

opencode prints one event per finished part: `step_start`, `text`, `tool_use` (a call with its
input, status and output, once it is over), `step_finish` (the step's tokens and cost, priced by
opencode from the served model's prices in opencode.json) and `error`. Its file tools already
carry the neutral names (`read`, `write`, `edit`, `skill`); the neutral `path` is put beside
their `filePath`, and the evaluator's MCP tool is the neutral `run_command`. A `skill` call that
succeeded, or a `read` of a skill's SKILL.md, is a read of that skill's snapshotted SKILL.md.
A turn is one `opencode run` process: it settles when that process ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...evidence.observed import Usage
from ..observation import SkillReadTranslator, text_or_none
from .registration import RUN_COMMAND

NEUTRAL_TOOLS = {RUN_COMMAND: "run_command"}


def _count(values: Mapping[str, object], key: str) -> int:
    value = values.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def step_usage(part: Mapping[str, object]) -> Usage | None:
    """A `step_finish` part's tokens and cost in the neutral usage shape."""
    tokens = part.get("tokens")
    if not isinstance(tokens, dict):
        return None
    cache = tokens.get("cache")
    cache = cache if isinstance(cache, dict) else {}
    cost = part.get("cost")
    total = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0
    return {
        "input": _count(tokens, "input"),
        "output": _count(tokens, "output") + _count(tokens, "reasoning"),
        "cacheRead": _count(cache, "read"),
        "cacheWrite": _count(cache, "write"),
        "cost": {"total": round(total, 12)},
    }


def neutral_args(arguments: Any) -> Any:
    """opencode's arguments with the neutral `path` beside its `filePath`."""
    if isinstance(arguments, dict) and isinstance(arguments.get("filePath"), str):
        return {"path": arguments["filePath"], **arguments}
    return arguments


@dataclass
class EventTranslator(SkillReadTranslator):
    """Applies opencode's events to an observation."""

    read_tool = ("read", "filePath")

    _message_id: str | None = None

    def apply(self, event: Mapping[str, object]) -> bool:
        """Apply one event; never settles a turn (the end of the process does)."""
        if self.session_id is None and isinstance(session := event.get("sessionID"), str):
            self.session_id = session
        turn = self.obs.current
        if turn is None:
            return False
        kind = event.get("type")
        raw_part = event.get("part")
        part: dict[str, object] = raw_part if isinstance(raw_part, dict) else {}
        if kind == "text":
            self._text(part)
        elif kind == "tool_use":
            self._tool(part)
        elif kind == "step_finish":
            usage = step_usage(part)
            if usage is not None:
                self.obs.assistant_reply(turn, turn.response, usage, None, None)
        elif kind == "error":
            self._error(event.get("error"))
        return False

    def _text(self, part: Mapping[str, object]) -> None:
        turn = self.obs.current
        text = part.get("text")
        if turn is None or not isinstance(text, str):
            return
        self.obs.message({"role": "assistant", "content": [{"type": "text", "text": text}]})
        # The texts of one message make its reply; a later message's replace it.
        same = part.get("messageID") is not None and part.get("messageID") == self._message_id
        self._message_id = text_or_none(part.get("messageID"))
        turn.response = turn.response + text if same else text

    def _tool(self, part: Mapping[str, object]) -> None:
        state = part.get("state")
        state = state if isinstance(state, dict) else {}
        name = str(part.get("tool"))
        call_id = part.get("callID")
        args = neutral_args(state.get("input"))
        self.obs.tool_started(text_or_none(call_id), NEUTRAL_TOOLS.get(name, name), args)
        failed = state.get("status") != "completed"
        self.obs.tool_ended(call_id, failed, state.get("output"))
        self.obs.message({"role": "tool", "part": dict(part)})
        self._message_id = None
        if not failed:
            self.tool_succeeded(name, args)

    def _error(self, error: object) -> None:
        turn = self.obs.current
        if turn is None:
            return
        detail = "error"
        if isinstance(error, dict):
            data = error.get("data")
            message = data.get("message") if isinstance(data, dict) else None
            detail = ": ".join(str(p) for p in (error.get("name"), message) if p) or detail
        self.obs.message({"role": "host", "error": detail})
        turn.assistant_error = turn.assistant_error or f"opencode reported: {detail}"
