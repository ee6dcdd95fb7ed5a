"""`codex app-server` messages read as the `codex exec --json` events `events.py` translates.

One app-server process runs every turn of a subject: JSON-RPC over its stdin and stdout, one
thread, one `turn/start` per prompt. Its notifications carry the same items as `codex exec
--json` (the command line, its output and exit code; a patch's changes; an MCP call's server,
tool, arguments and result), in camelCase and under other names: `exec_event` renames them, so
one translator (`EventTranslator`) reads both and the facts cannot drift apart. Usage is the
thread's running total (`thread/tokenUsage/updated`), which `turn/completed` reports as
`codex exec` reports it: the translator takes a turn's part as the difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..observation import Observation
from .events import EventTranslator

# Streamed pieces of what each `item/completed` carries whole, the turn's whole diff again after
# each change, the account's rate limits (there is no account) and the remote control's status
# (off; it names the machine): not asked for (the events file and the evaluator's CPU need none
# of them).
OPTED_OUT = (
    "turn/diff/updated",
    "account/rateLimits/updated",
    "remoteControl/status/changed",
    "item/agentMessage/delta",
    "item/plan/delta",
    "item/reasoning/summaryTextDelta",
    "item/reasoning/summaryPartAdded",
    "item/reasoning/textDelta",
    "item/commandExecution/outputDelta",
    "item/fileChange/outputDelta",
    "item/mcpToolCall/progress",
)
# Warnings, and the field that says each.
WARNINGS = {"warning": "message", "configWarning": "summary", "deprecationNotice": "summary"}
# v2 item types → `codex exec --json` item types.
ITEM_TYPES = {
    "agentMessage": "agent_message",
    "commandExecution": "command_execution",
    "fileChange": "file_change",
    "mcpToolCall": "mcp_tool_call",
}
STATUSES = {"inProgress": "in_progress"}
# `TokenUsageBreakdown` → `codex exec`'s usage keys.
USAGE_KEYS = {
    "inputTokens": "input_tokens",
    "cachedInputTokens": "cached_input_tokens",
    "cacheWriteInputTokens": "cache_write_input_tokens",
    "outputTokens": "output_tokens",
    "reasoningOutputTokens": "reasoning_output_tokens",
}


def exec_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A v2 `ThreadItem` as `codex exec --json` writes it (unknown types keep their own)."""
    kind = str(item.get("type"))
    converted: dict[str, Any] = {"id": item.get("id"), "type": ITEM_TYPES.get(kind, kind)}
    status = item.get("status")
    if status is not None:
        converted["status"] = STATUSES.get(str(status), status)
    if kind == "agentMessage":
        converted["text"] = item.get("text")
    elif kind == "commandExecution":
        converted["command"] = item.get("command")
        converted["aggregated_output"] = item.get("aggregatedOutput") or ""
        converted["exit_code"] = item.get("exitCode")
    elif kind == "fileChange":
        changes = item.get("changes")
        converted["changes"] = [
            {"path": change.get("path"), "kind": _change_kind(change.get("kind"))}
            for change in (changes if isinstance(changes, list) else [])
            if isinstance(change, dict)
        ]
    elif kind == "mcpToolCall":
        for key in ("server", "tool", "arguments", "result", "error"):
            converted[key] = item.get(key)
    else:
        converted.update({k: v for k, v in item.items() if k not in converted})
    return converted


def _change_kind(kind: object) -> object:
    """`{"type": "update", ...}` → `"update"`, as `codex exec` names a change's kind."""
    return kind.get("type") if isinstance(kind, dict) else kind


def exec_usage(breakdown: object) -> dict[str, int]:
    """A `TokenUsageBreakdown` under `codex exec`'s usage keys."""
    if not isinstance(breakdown, dict):
        return {}
    return {
        exec_key: value
        for key, exec_key in USAGE_KEYS.items()
        if isinstance(value := breakdown.get(key), int) and not isinstance(value, bool)
    }


@dataclass
class AppServerTranslator:
    """Applies app-server notifications to an observation, through `EventTranslator`; keeps
    the responses to the evaluator's requests by id, and the server's own requests to answer."""

    events: EventTranslator
    responses: dict[int, dict[str, Any]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    _usage: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(
        cls, obs: Observation, skills: Mapping[str, str], prices: Mapping[str, float] | None
    ) -> AppServerTranslator:
        """A translator into `obs` (`EventTranslator`'s `skills` and `prices`)."""
        return cls(EventTranslator(obs, skills, prices))

    def apply(self, message: dict[str, Any]) -> bool:
        """Apply one message; True when it settles the current turn."""
        method = message.get("method")
        if "id" in message and method is None:
            if isinstance(message["id"], int):
                self.responses[message["id"]] = message
            return False
        if "id" in message:
            self.requests.append(message)
            return False
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        event = self._exec_event(str(method), params)
        return False if event is None else self.events.apply(event)

    def _exec_event(self, method: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """The `codex exec --json` event a notification stands for (None: none)."""
        item = params.get("item")
        if method in ("item/started", "item/completed") and isinstance(item, dict):
            return {"type": method.replace("/", "."), "item": exec_item(item)}
        if method == "thread/tokenUsage/updated":
            usage = params.get("tokenUsage")
            self._usage = exec_usage(usage.get("total") if isinstance(usage, dict) else None)
            return None
        if method == "turn/completed":
            turn = params.get("turn")
            turn = turn if isinstance(turn, dict) else {}
            if turn.get("status") == "completed":
                return {"type": "turn.completed", "usage": dict(self._usage)}
            error = turn.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            return {"type": "turn.failed", "error": {"message": message or turn.get("status")}}
        if method in WARNINGS:
            # `codex exec` writes its warnings as error items; the translator keeps them so.
            warning = params.get(WARNINGS[method])
            return {"type": "item.completed", "item": {"type": "error", "message": warning}}
        if method == "error":
            error = params.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            return {"type": "error", "message": message}
        return None
