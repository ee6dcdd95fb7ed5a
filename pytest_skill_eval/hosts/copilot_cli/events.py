"""`copilot -p … --output-format json` events translated into the neutral observation.

Copilot CLI prints one JSON object per line: `assistant.message` (a model answer: its text and
the tool calls it asked for), `tool.execution_start` and `tool.execution_complete` (a call and
its outcome, `success` or an `error`), `session.*` notices and, last, `result` (the session id,
its exit code). Its events carry no token counts: each turn's usage is read from the file
`--usage-output-file` writes as the process ends (`turn_usage`), a running total for the
session from which the turn's share is taken. `view`, `create` and `edit` take the neutral
`path`; the evaluator's MCP tool is the neutral `run_command`. A `skill` call that succeeded, or
a `view` of a skill's SKILL.md, is a read of that skill's snapshotted SKILL.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..observation import SkillReadTranslator
from .registration import RUN_COMMAND

NEUTRAL_TOOLS = {"view": "read", "create": "write", RUN_COMMAND: "run_command"}
_USAGE_KEYS = {
    "input": "inputTokens",
    "output": "outputTokens",
    "cacheRead": "cacheReadTokens",
    "cacheWrite": "cacheWriteTokens",
}


def _count(values: Mapping[str, Any], key: str) -> int:
    value = values.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def session_usage(report: Any) -> dict[str, int]:
    """The tokens a `--usage-output-file` report counts over every model of the session."""
    totals = dict.fromkeys(_USAGE_KEYS, 0)
    metrics = report.get("modelMetrics") if isinstance(report, dict) else None
    for model in metrics.values() if isinstance(metrics, dict) else ():
        usage = model.get("usage") if isinstance(model, dict) else None
        if isinstance(usage, dict):
            for neutral, key in _USAGE_KEYS.items():
                totals[neutral] += _count(usage, key)
    return totals


def turn_usage(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, Any]:
    """One turn's usage in the neutral shape: what the session's totals grew by (the cost is
    the evaluator's to price)."""
    usage: dict[str, Any] = {k: max(after.get(k, 0) - before.get(k, 0), 0) for k in _USAGE_KEYS}
    return {**usage, "cost": {"total": 0.0}}


@dataclass
class EventTranslator(SkillReadTranslator):
    """Applies Copilot CLI's events to an observation."""

    read_tool = ("view", "path")
    skill_argument = "skill"

    _calls: dict[str, tuple[str, Any]] = field(default_factory=dict)

    def apply(self, event: dict[str, Any]) -> bool:
        """Apply one event; never settles a turn (the end of the process does)."""
        kind = event.get("type")
        if kind == "result" and isinstance(event.get("sessionId"), str):
            self.session_id = event["sessionId"]
        turn = self.obs.current
        data = event.get("data")
        data = data if isinstance(data, dict) else {}
        if turn is None:
            return False
        if kind == "assistant.message":
            self._message(data)
        elif kind == "tool.execution_start":
            self._started(data)
        elif kind == "tool.execution_complete":
            self._completed(data)
        elif kind == "session.error":
            detail = str(data.get("message") or data.get("errorType") or "error")
            self.obs.message({"role": "host", "error": detail})
            turn.assistant_error = turn.assistant_error or f"Copilot CLI reported: {detail}"
        return False

    def _message(self, data: Mapping[str, Any]) -> None:
        turn = self.obs.current
        if turn is None:
            return
        text = data.get("content") if isinstance(data.get("content"), str) else ""
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for request in data.get("toolRequests") or []:
            if isinstance(request, dict):
                content.append({"type": "toolCall", **request})
        self.obs.message({"role": "assistant", "content": content})
        # A message that only asks for tools keeps the turn's reply; a text replaces it.
        self.obs.assistant_reply(turn, text or turn.response, None, None, None)

    def _started(self, data: Mapping[str, Any]) -> None:
        call_id = data.get("toolCallId")
        name = str(data.get("toolName"))
        args = data.get("arguments")
        self._calls[str(call_id)] = (name, args)
        self.obs.tool_started(call_id, NEUTRAL_TOOLS.get(name, name), args)

    def _completed(self, data: Mapping[str, Any]) -> None:
        call_id = data.get("toolCallId")
        name, args = self._calls.pop(str(call_id), ("", None))
        failed = data.get("success") is not True
        result = data.get("error") if failed else data.get("result")
        output = result.get("content", result.get("message")) if isinstance(result, dict) else None
        self.obs.tool_ended(call_id, failed, output)
        self.obs.message({"role": "tool", "toolCallId": call_id, "success": not failed})
        if not failed:
            self.tool_succeeded(name, args)
