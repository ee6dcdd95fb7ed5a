"""Parse real providers' streamed answers (SSE) into the neutral response form of scripts."""

from __future__ import annotations

from typing import Any

from pytest_skill_eval.modelserver.gemini import GEMINI, GeminiStreamParser
from pytest_skill_eval.modelserver.responses import ResponsesStreamParser
from pytest_skill_eval.modelserver.script import ErrorReply, ScriptedResponse, StopReason, Usage
from pytest_skill_eval.modelserver.sse import (
    NO_USAGE,
    ParsedStream,
    PendingCall,
    SseDecoder,
    SseEvent,
    StreamParser,
    TypedStreamParser,
    count,
    json_object,
)
from pytest_skill_eval.modelserver.wire import ANTHROPIC, OPENAI, OPENAI_RESPONSES, SERVED_APIS

__all__ = [
    "NO_USAGE",
    "AnthropicStreamParser",
    "OpenAIStreamParser",
    "ParsedStream",
    "ResponsesStreamParser",
    "SseDecoder",
    "SseEvent",
    "StreamParser",
    "error_message",
    "error_response",
    "parse_stream",
    "stream_parser",
]

_OPENAI_STOP: dict[str, StopReason] = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}
_ANTHROPIC_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_use",
}
# Pi reads the first non-empty one of these delta fields as reasoning.
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_MESSAGE_LIMIT = 500


class OpenAIStreamParser(StreamParser):
    """OpenAI chat-completions chunks: content, reasoning, tool-call fragments, usage, [DONE]."""

    api = OPENAI

    def _complete(self) -> bool:
        # `[DONE]` is the end marker, but some compatible servers stop after the finish reason.
        return self.done or self._state.stop is not None

    def _event(self, event: SseEvent) -> None:
        state = self._state
        state.events += 1
        if event.data.strip() == "[DONE]":
            self.done = True
            return
        chunk = json_object(event.data)
        if chunk is None:
            state.problems.append(f"an event is not a JSON object: {event.data[:80]!r}")
            return
        if chunk.get("error") is not None:
            state.stop = "error"
            return
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        usage = chunk.get("usage")
        if not isinstance(usage, dict) and isinstance(choice, dict):
            usage = choice.get("usage")
        if isinstance(usage, dict):
            state.usage = _openai_usage(usage)
        if not isinstance(choice, dict):
            return
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            state.stop = _OPENAI_STOP.get(reason, "error")
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        content = delta.get("content")
        if isinstance(content, str):
            state.text.append(content)
        for name in _REASONING_FIELDS:
            value = delta.get(name)
            if isinstance(value, str) and value:
                state.thinking.append(value)
                break
        parts = delta.get("tool_calls")
        for position, part in enumerate(parts if isinstance(parts, list) else []):
            if isinstance(part, dict):
                self._tool_part(part, position)

    def _tool_part(self, part: dict[str, Any], position: int) -> None:
        calls = self._state.calls
        index = part.get("index")
        key = index if isinstance(index, int) and not isinstance(index, bool) else position
        call = calls.setdefault(key, PendingCall())
        if isinstance(part.get("id"), str) and part["id"] and call.id is None:
            call.id = part["id"]
        function = part.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if isinstance(name, str) and name and not call.name:
                call.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                call.arguments += arguments


class AnthropicStreamParser(TypedStreamParser):
    """Anthropic messages events: message_start, content_block_*, message_delta, message_stop."""

    api = ANTHROPIC

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, dict[str, Any]] = {}
        self._order: list[int] = []

    def _typed(self, kind: str | None, data: dict[str, Any]) -> None:
        state = self._state
        if kind == "message_start":
            message = data.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
            if isinstance(usage, dict):
                state.usage = _anthropic_usage(usage, NO_USAGE)
        elif kind == "content_block_start":
            self._start(data)
        elif kind == "content_block_delta":
            self._delta(data)
        elif kind == "message_delta":
            delta = data.get("delta")
            reason = delta.get("stop_reason") if isinstance(delta, dict) else None
            if isinstance(reason, str):
                state.stop = _ANTHROPIC_STOP.get(reason, "error")
            usage = data.get("usage")
            if isinstance(usage, dict):
                state.usage = _anthropic_usage(usage, state.usage)
        elif kind == "message_stop":
            self.done = True
            self._collect()
        elif kind == "error":
            state.stop = "error"
            self.done = True
            self._collect()

    def finish(self) -> ParsedStream:
        """The neutral response; blocks are collected even when the stream was cut short."""
        for event in self._decoder.close():
            self._event(event)
        if not self.done:
            self._collect()
        if not self._state.events:
            self._state.problems.append("the answer held no server-sent events")
        return self._state.build(self.done)

    def _start(self, data: dict[str, Any]) -> None:
        index = data.get("index")
        block = data.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            return
        kind = block.get("type")
        entry: dict[str, Any] = {"type": kind, "text": "", "json": ""}
        if kind == "text" and isinstance(block.get("text"), str):
            entry["text"] = block["text"]
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            entry["text"] = block["thinking"]
        elif kind == "tool_use":
            entry["id"] = block.get("id") if isinstance(block.get("id"), str) else None
            entry["name"] = block.get("name") if isinstance(block.get("name"), str) else ""
            initial = block.get("input")
            entry["initial"] = initial if isinstance(initial, dict) else None
        self._blocks[index] = entry
        self._order.append(index)

    def _delta(self, data: dict[str, Any]) -> None:
        block = self._blocks.get(data.get("index", -1))
        delta = data.get("delta")
        if block is None or not isinstance(delta, dict):
            return
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            block["text"] += delta["text"]
        elif kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block["text"] += delta["thinking"]
        elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            block["json"] += delta["partial_json"]

    def _collect(self) -> None:
        state = self._state
        state.text, state.thinking, state.calls = [], [], {}
        for position, index in enumerate(self._order):
            block = self._blocks[index]
            if block["type"] == "text":
                state.text.append(block["text"])
            elif block["type"] == "thinking":
                state.thinking.append(block["text"])
            elif block["type"] == "tool_use":
                state.calls[position] = PendingCall(
                    id=block.get("id"),
                    name=block.get("name") or "",
                    arguments=block["json"],
                    initial=block.get("initial"),
                )


def stream_parser(api: str) -> StreamParser:
    """A fresh parser for the streamed answers of `api`."""
    if api == OPENAI:
        return OpenAIStreamParser()
    if api == ANTHROPIC:
        return AnthropicStreamParser()
    if api == OPENAI_RESPONSES:
        return ResponsesStreamParser()
    if api == GEMINI:
        return GeminiStreamParser()
    raise ValueError(f"unsupported api {api!r}; expected one of {', '.join(SERVED_APIS)}")


def parse_stream(api: str, data: bytes) -> ParsedStream:
    """Parse a whole streamed answer of `api` at once."""
    parser = stream_parser(api)
    parser.feed(data)
    return parser.finish()


def error_response(status: int, body: bytes) -> ScriptedResponse:
    """The neutral form of an HTTP error answer: its status and the provider's message."""
    return ScriptedResponse(error=ErrorReply(status, error_message(status, body)), stop="error")


def error_message(status: int, body: bytes) -> str:
    """The message of an error body in either wire format, else its text (never empty)."""
    text = body.decode("utf-8", "replace").strip()
    data = json_object(text)
    if data is not None:
        error = data.get("error")
        for candidate in (
            error.get("message") if isinstance(error, dict) else error,
            data.get("message"),
            data.get("detail"),
        ):
            if isinstance(candidate, str) and candidate.strip():
                text = candidate.strip()
                break
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT - 3] + "..."
    return text or f"HTTP {status}"


def _openai_usage(raw: dict[str, Any]) -> Usage:
    # The inverse of what wire.openai_chunks renders, following pi-ai's parseChunkUsage.
    prompt = count(raw.get("prompt_tokens"))
    details = raw.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    cached_raw = details.get("cached_tokens")
    if cached_raw is None:
        cached_raw = raw.get("prompt_cache_hit_tokens")
    cached = count(cached_raw)
    write = count(details.get("cache_write_tokens"))
    read = max(0, cached - write) if write > 0 else cached
    return Usage(
        input=max(0, prompt - read - write),
        output=count(raw.get("completion_tokens")),
        cache_read=read,
        cache_write=write,
    )


def _anthropic_usage(raw: dict[str, Any], base: Usage) -> Usage:
    # message_delta repeats or updates message_start's numbers; absent ones are kept.
    def pick(key: str, old: int) -> int:
        value = raw.get(key)
        return old if value is None else count(value)

    return Usage(
        input=pick("input_tokens", base.input),
        output=pick("output_tokens", base.output),
        cache_read=pick("cache_read_input_tokens", base.cache_read),
        cache_write=pick("cache_creation_input_tokens", base.cache_write),
    )
