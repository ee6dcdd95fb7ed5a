"""Pi's event stream (`--mode json` and `--mode rpc`) translated into the neutral observation."""

from __future__ import annotations

from collections.abc import Mapping

from ...evidence.observed import ObservedModel
from ..observation import Observation, Turn, text_or_none


def message_text(message: Mapping[str, object]) -> str:
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


def apply_event(obs: Observation, event: Mapping[str, object]) -> bool:
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
        call, name = text_or_none(event.get("toolCallId")), text_or_none(event.get("toolName"))
        obs.tool_started(call, name, event.get("args"))
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
    elif kind == "message_end" and isinstance(message := event.get("message"), dict):
        turn = obs.message(message)
        if turn is not None and message.get("role") == "assistant":
            _assistant(obs, turn, message)
    elif kind in ("agent_end", "agent_settled"):
        # With retry and compaction off, agent_end is final on Pi 0.73.1; newer Pi says so
        # explicitly with agent_settled.
        return obs.settle()
    return False


def _assistant(obs: Observation, turn: Turn, message: dict[str, object]) -> None:
    model: ObservedModel | None = None
    provider, name = message.get("provider"), message.get("model")
    if isinstance(provider, str) or isinstance(name, str):
        model = {"provider": text_or_none(provider), "model": text_or_none(name)}
    reason = message.get("stopReason")
    error = None
    if reason in ("error", "aborted"):
        error = str(message.get("errorMessage") or f"assistant stopped with {reason}")
    obs.assistant_reply(turn, message_text(message), message.get("usage"), model, error)
