"""Pi's event stream (`--mode json` and `--mode rpc`) translated into the neutral observation."""

from __future__ import annotations

from typing import Any

from ..observation import Observation, Turn


def message_text(message: dict[str, Any]) -> str:
    """Assistant text: string content, or the text parts joined with no separator."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def apply_event(obs: Observation, event: dict[str, Any]) -> bool:
    """Apply one Pi event; returns True when it settles the current turn."""
    kind = event.get("type")
    if kind == "extension_error":
        obs.protocol_error(
            "extension-error",
            extensionPath=event.get("extensionPath"),
            event=event.get("event"),
            error=event.get("error"),
        )
        return False
    if obs.current is None:
        return False
    if kind == "tool_execution_start":
        obs.tool_started(event.get("toolCallId"), event.get("toolName"), event.get("args"))
    elif kind == "tool_execution_end":
        activity = obs.tool_ended(
            event.get("toolCallId"), event.get("isError") is True, event.get("result")
        )
        args = activity.get("args") if activity is not None else None
        if (
            activity is not None
            and activity["toolName"] == "read"
            and not activity["isError"]
            and isinstance(args, dict)
            and isinstance(args.get("path"), str)
        ):
            obs.read_succeeded(args["path"])
    elif kind == "message_end" and isinstance(event.get("message"), dict):
        message = event["message"]
        turn = obs.message(message)
        if turn is not None and message.get("role") == "assistant":
            _assistant(obs, turn, message)
    elif kind in ("agent_end", "agent_settled"):
        # With retry and compaction off, agent_end is final on Pi 0.73.1; newer Pi says so
        # explicitly with agent_settled.
        return obs.settle()
    return False


def _assistant(obs: Observation, turn: Turn, message: dict[str, Any]) -> None:
    model = None
    if isinstance(message.get("provider"), str) or isinstance(message.get("model"), str):
        model = {"provider": message.get("provider"), "model": message.get("model")}
    reason = message.get("stopReason")
    error = None
    if reason in ("error", "aborted"):
        error = message.get("errorMessage") or f"assistant stopped with {reason}"
    obs.assistant_reply(turn, message_text(message), message.get("usage"), model, error)
