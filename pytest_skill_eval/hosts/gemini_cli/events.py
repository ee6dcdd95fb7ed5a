"""Gemini CLI's `--output-format stream-json` events translated into the neutral observation.

Events: `init` (session id, model), `message` (the user's prompt; the assistant's text in
deltas), `tool_use` (`tool_name`, `tool_id`, `parameters`), `tool_result` (`status`, `output`
or `error`), `error`, and `result` (`status`, `stats` with the process's token counts). Tool
calls are recorded under the neutral names (`read`, `write`, `edit`, `skill`, `run_command`)
with the neutral `path` beside the host's `file_path`; a successful `activate_skill`, or a
`read_file` of a snapshotted SKILL.md, is a read of that skill's SKILL.md, as on every host.
Each turn is its own process, so a `result`'s stats are that turn's usage, priced at the
served model's prices (Gemini CLI prices nothing itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...evidence.observed import Usage
from ..observation import USAGE_FIELDS, Observation, text_or_none
from .registration import RUN_COMMAND

NEUTRAL_TOOLS = {
    "read_file": "read",
    "write_file": "write",
    "replace": "edit",
    "activate_skill": "skill",
    RUN_COMMAND: "run_command",
}


def neutral_args(tool: str, arguments: Any) -> Any:
    """The host's arguments with the neutral `path` beside them."""
    if not isinstance(arguments, dict):
        return arguments
    if tool in ("read_file", "write_file", "replace") and isinstance(
        arguments.get("file_path"), str
    ):
        return {"path": arguments["file_path"], **arguments}
    return arguments


def _count(stats: Mapping[str, object], key: str) -> int:
    value = stats.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def neutral_usage(stats: object, prices: Mapping[str, float] | None) -> Usage | None:
    """A `result`'s stats in the neutral shape: cached tokens are inside `input_tokens`."""
    if not isinstance(stats, dict):
        return None
    cached = _count(stats, "cached")
    usage: Usage = {
        "input": max(0, _count(stats, "input_tokens") - cached),
        "output": _count(stats, "output_tokens"),
        "cacheRead": cached,
        "cacheWrite": 0,
        "cost": {},
    }
    total = sum(usage[k] * (prices or {}).get(k, 0.0) for k in USAGE_FIELDS) / 1e6
    usage["cost"]["total"] = round(total, 12)
    return usage


@dataclass
class StreamTranslator:
    """Applies events to an observation; `skills` maps each installed skill name to its
    snapshotted SKILL.md, `cwd` is where relative paths resolve."""

    obs: Observation
    skills: Mapping[str, Path]
    cwd: Path
    prices: Mapping[str, float] | None = None
    session_id: str | None = None
    _text: list[str] = field(default_factory=list)

    def apply(self, event: Mapping[str, object]) -> bool:
        """Apply one event; True when it settles the current turn (a `result`)."""
        kind = event.get("type")
        if kind == "init":
            if isinstance(session := event.get("session_id"), str):
                self.session_id = session
            if isinstance(model := event.get("model"), str):
                self.obs.model = {"provider": "google", "model": model}
            return False
        turn = self.obs.current
        if turn is None:
            return False
        if kind == "message" and event.get("role") == "assistant":
            self._text.append(str(event.get("content") or ""))
        elif kind == "tool_use":
            self._flush()
            name = str(event.get("tool_name"))
            args = neutral_args(name, event.get("parameters"))
            call = text_or_none(event.get("tool_id"))
            self.obs.tool_started(call, NEUTRAL_TOOLS.get(name, name), args)
        elif kind == "tool_result":
            self._tool_result(event)
        elif kind == "error":
            self.obs.message({"role": "host", "error": str(event.get("message") or "")})
        elif kind == "result":
            return self._result(event)
        return False

    def _flush(self) -> None:
        """The assistant text streamed since the last tool call, as one message."""
        text = "".join(self._text)
        self._text = []
        turn = self.obs.message({"role": "assistant", "content": [{"type": "text", "text": text}]})
        if turn is not None and text:
            turn.response = text

    def _tool_result(self, event: Mapping[str, object]) -> None:
        failed = event.get("status") != "success"
        activity = self.obs.tool_ended(event.get("tool_id"), failed, event.get("output"))
        self.obs.message({"role": "tool", "item": event})
        args = activity.get("args") if activity is not None else None
        if activity is None or failed or not isinstance(args, dict):
            return
        self.obs.read_by(activity, self.skills, "name", cwd=self.cwd)

    def _result(self, event: Mapping[str, object]) -> bool:
        turn = self.obs.current
        if turn is None:
            return False
        if self._text:
            self._flush()
        turn.usage = neutral_usage(event.get("stats"), self.prices)
        if event.get("status") != "success":
            error = event.get("error")
            detail = error.get("message") if isinstance(error, dict) else None
            message = f"Gemini CLI reported: {detail or event.get('status') or 'error'}"
            turn.assistant_error = turn.assistant_error or message
        return self.obs.settle()
