"""Claude Code's stream-json events translated into the neutral observation.

Tool calls are recorded under the neutral names (`read`, `write`, `edit`, `skill`, and
`run_command` for the evaluator's MCP tool) with the
neutral `path` beside the host's `file_path`, so every expectation kind grades the same on every
host. A `Skill` call that succeeded, or a `Read` of a snapshotted SKILL.md, is a read of that
skill's SKILL.md: the same `skill-read` fact as on Pi.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...evidence.observed import Usage
from ..observation import Observation, text_or_none
from .registration import RUN_COMMAND as CLAUDE_CODE_RUN_COMMAND

NEUTRAL_TOOLS = {
    "Read": "read",
    "Write": "write",
    "Edit": "edit",
    "Skill": "skill",
    CLAUDE_CODE_RUN_COMMAND: "run_command",
}
_COMMAND_NAME = re.compile(r"<command-name>/([^<\s]+)</command-name>")


def _blocks(message: Mapping[str, object]) -> list[dict[str, object]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text(message: Mapping[str, object]) -> str:
    return "".join(str(b.get("text", "")) for b in _blocks(message) if b.get("type") == "text")


def neutral_args(tool: str, arguments: Any) -> Any:
    """The host's arguments with the neutral `path` (and skill `name`) beside them."""
    if not isinstance(arguments, dict):
        return arguments
    if tool in ("Read", "Write", "Edit") and isinstance(arguments.get("file_path"), str):
        return {"path": arguments["file_path"], **arguments}
    if tool == "Skill" and isinstance(arguments.get("skill"), str):
        return {"name": arguments["skill"], **arguments}
    return arguments


def neutral_usage(usage: object, cost: float) -> Usage | None:
    """A `result` event's usage in the neutral shape, with the host-reported cost as total."""
    if not isinstance(usage, dict):
        return None

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return {
        "input": count("input_tokens"),
        "output": count("output_tokens"),
        "cacheRead": count("cache_read_input_tokens"),
        "cacheWrite": count("cache_creation_input_tokens"),
        "cost": {"total": round(cost, 12)},
    }


@dataclass
class StreamTranslator:
    """Applies events to an observation; `skills` maps each visible skill name to its SKILL.md."""

    obs: Observation
    skills: Mapping[str, Path]
    delivered_commands: list[str] = field(default_factory=list)
    # The evaluator's MCP server must be up when the group declares commands.
    command_server: str | None = None
    _message_id: str | None = None
    _cost_so_far: float = 0.0

    def apply(self, event: Mapping[str, object]) -> bool:
        """Apply one event; True when it settles the current turn (a `result`)."""
        kind = event.get("type")
        turn = self.obs.current
        if turn is None:
            return False
        message = event.get("message")
        if kind == "assistant" and isinstance(message, dict):
            self._assistant(message)
        elif kind == "user" and isinstance(message, dict):
            if event.get("isReplay") is True:
                # Our own prompt echoed back: a skill command the host expanded says so here.
                self.delivered_commands += _COMMAND_NAME.findall(_text(message))
                return False
            self.obs.message(message)
            self._tool_results(message)
        elif kind == "result":
            return self._result(event)
        elif kind == "system" and event.get("subtype") == "init":
            self._init(event)
        return False

    def _init(self, event: Mapping[str, object]) -> None:
        """A declared command that cannot be offered is the evaluator's failure, not the model's."""
        if self.command_server is None:
            return
        servers = event.get("mcp_servers")
        status = next(
            (
                s.get("status")
                for s in (servers if isinstance(servers, list) else [])
                if isinstance(s, dict) and s.get("name") == self.command_server
            ),
            None,
        )
        if status != "connected":
            self.obs.protocol_error(
                "command-tool-unavailable",
                message=f"the evaluator's command tool server is {status or 'missing'}",
            )

    def _assistant(self, message: dict[str, object]) -> None:
        turn = self.obs.message(message)
        if turn is None:
            return
        # Claude Code sends one event per content block, all with the message's id.
        same = message.get("id") is not None and message.get("id") == self._message_id
        self._message_id = text_or_none(message.get("id"))
        text = _text(message)
        model = message.get("model")
        turn.response = (turn.response + text) if same else text
        if isinstance(model, str):
            self.obs.model = {"provider": "anthropic", "model": model}
        for block in _blocks(message):
            if block.get("type") == "tool_use":
                name = str(block.get("name"))
                self.obs.tool_started(
                    text_or_none(block.get("id")),
                    NEUTRAL_TOOLS.get(name, name),
                    neutral_args(name, block.get("input")),
                )

    def _tool_results(self, message: dict[str, object]) -> None:
        for block in _blocks(message):
            if block.get("type") != "tool_result":
                continue
            activity = self.obs.tool_ended(
                block.get("tool_use_id"), block.get("is_error") is True, block.get("content")
            )
            if activity is None or activity["isError"]:
                continue
            if isinstance(activity.get("args"), dict):
                self.obs.read_by(activity, self.skills, "skill")

    def _result(self, event: Mapping[str, object]) -> bool:
        turn = self.obs.current
        if turn is None:
            return False
        total = event.get("total_cost_usd")
        cost = 0.0
        if isinstance(total, int | float) and not isinstance(total, bool):
            # The host reports the session's running total; a turn costs the difference.
            cost, self._cost_so_far = max(0.0, total - self._cost_so_far), float(total)
        turn.usage = neutral_usage(event.get("usage"), cost)
        if isinstance(result := event.get("result"), str) and not turn.response:
            turn.response = result
        if event.get("is_error") is True or event.get("subtype") not in ("success", None):
            detail = event.get("result") or event.get("subtype") or "error"
            turn.assistant_error = turn.assistant_error or f"Claude Code reported: {detail}"
        self._message_id = None
        return self.obs.settle()
