"""Parse real providers' streamed answers (SSE) into the neutral response form of scripts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pytest_skill_eval.modelserver.script import (
    ErrorReply,
    ScriptedResponse,
    StopReason,
    ToolCall,
    Usage,
)
from pytest_skill_eval.modelserver.wire import ANTHROPIC, APIS, OPENAI

NO_USAGE = Usage(input=0, output=0, cache_read=0, cache_write=0)
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


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event: its `event:` name (None when absent) and joined `data:` lines."""

    event: str | None
    data: str


class SseDecoder:
    """Incremental SSE decoder: feed bytes as they arrive, get complete events back."""

    def __init__(self) -> None:
        self._buffer = b""
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Decode the complete lines in `chunk` (plus what was buffered)."""
        self._buffer += chunk
        events: list[SseEvent] = []
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                return events
            # Lines are decoded whole, so a UTF-8 character split across chunks stays intact.
            line = self._buffer[:end].removesuffix(b"\r").decode("utf-8", "replace")
            self._buffer = self._buffer[end + 1 :]
            event = self._line(line)
            if event is not None:
                events.append(event)

    def close(self) -> list[SseEvent]:
        """Flush an unterminated last line and event at the end of the stream."""
        events: list[SseEvent] = []
        if self._buffer:
            line = self._buffer.removesuffix(b"\r").decode("utf-8", "replace")
            self._buffer = b""
            event = self._line(line)
            if event is not None:
                events.append(event)
        event = self._line("")
        if event is not None:
            events.append(event)
        return events

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            if not self._data and self._event is None:
                return None
            event = SseEvent(self._event, "\n".join(self._data))
            self._event, self._data = None, []
            return event if event.data else None
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


@dataclass(frozen=True)
class ParsedStream:
    """A parsed answer: the neutral response, whether the stream ended properly, and problems
    that keep the recording from being faithful."""

    response: ScriptedResponse
    complete: bool
    problems: tuple[str, ...] = ()


@dataclass
class _Call:
    id: str | None = None
    name: str = ""
    arguments: str = ""
    initial: dict[str, Any] | None = None


@dataclass
class _Collector:
    """What both parsers gather before building the neutral response."""

    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    usage: Usage = NO_USAGE
    stop: StopReason | None = None
    events: int = 0
    problems: list[str] = field(default_factory=list)

    def build(self, complete: bool) -> ParsedStream:
        problems = list(self.problems)
        calls: list[ToolCall] = []
        for position in sorted(self.calls):
            call = self.calls[position]
            arguments = _arguments(call, problems)
            calls.append(ToolCall(name=call.name, arguments=arguments, id=call.id))
        stop = self.stop
        if stop is None:
            if complete:
                problems.append("the stream ended without a stop reason")
            stop = "tool_use" if calls else "stop"
        if not complete:
            problems.append("the stream ended before its final event")
        # Keep the neutral form loadable: a stop that contradicts the calls follows the calls.
        if stop == "stop" and calls:
            stop = "tool_use"
        elif stop == "tool_use" and not calls:
            stop = "stop"
        response = ScriptedResponse(
            text="".join(self.text) or None,
            thinking="".join(self.thinking) or None,
            tool_calls=tuple(calls),
            usage=self.usage,
            stop=stop,
        )
        return ParsedStream(response, complete, tuple(problems))


class StreamParser:
    """Incremental parser of one streamed answer; `done` once its final event was seen."""

    api: str = ""

    def __init__(self) -> None:
        self._decoder = SseDecoder()
        self._state = _Collector()
        self.done = False

    def feed(self, chunk: bytes) -> None:
        """Parse the complete events in `chunk`."""
        for event in self._decoder.feed(chunk):
            self._event(event)

    def finish(self) -> ParsedStream:
        """The neutral response of everything fed so far."""
        for event in self._decoder.close():
            self._event(event)
        if not self._state.events:
            self._state.problems.append("the answer held no server-sent events")
        return self._state.build(self._complete())

    def _complete(self) -> bool:
        return self.done

    def _event(self, event: SseEvent) -> None:
        raise NotImplementedError


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
        chunk = _json_object(event.data)
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
        call = calls.setdefault(key, _Call())
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


class AnthropicStreamParser(StreamParser):
    """Anthropic messages events: message_start, content_block_*, message_delta, message_stop."""

    api = ANTHROPIC

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, dict[str, Any]] = {}
        self._order: list[int] = []

    def _event(self, event: SseEvent) -> None:
        state = self._state
        state.events += 1
        data = _json_object(event.data)
        if data is None:
            state.problems.append(f"an event is not a JSON object: {event.data[:80]!r}")
            return
        kind = data.get("type", event.event)
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
                state.calls[position] = _Call(
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
    raise ValueError(f"unsupported api {api!r}; expected one of {', '.join(APIS)}")


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
    data = _json_object(text)
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


def _arguments(call: _Call, problems: list[str]) -> dict[str, Any]:
    if not call.arguments.strip():
        return dict(call.initial or {})
    try:
        value = json.loads(call.arguments)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict):
        return value
    problems.append(
        f"tool call {call.name or '?'} has arguments that are not a JSON object: "
        f"{call.arguments[:80]!r}"
    )
    return {}


def _openai_usage(raw: dict[str, Any]) -> Usage:
    # The inverse of what wire.openai_chunks renders, following pi-ai's parseChunkUsage.
    prompt = _count(raw.get("prompt_tokens"))
    details = raw.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    cached_raw = details.get("cached_tokens")
    if cached_raw is None:
        cached_raw = raw.get("prompt_cache_hit_tokens")
    cached = _count(cached_raw)
    write = _count(details.get("cache_write_tokens"))
    read = max(0, cached - write) if write > 0 else cached
    return Usage(
        input=max(0, prompt - read - write),
        output=_count(raw.get("completion_tokens")),
        cache_read=read,
        cache_write=write,
    )


def _anthropic_usage(raw: dict[str, Any], base: Usage) -> Usage:
    # message_delta repeats or updates message_start's numbers; absent ones are kept.
    def pick(key: str, old: int) -> int:
        value = raw.get(key)
        return old if value is None else _count(value)

    return Usage(
        input=pick("input_tokens", base.input),
        output=pick("output_tokens", base.output),
        cache_read=pick("cache_read_input_tokens", base.cache_read),
        cache_write=pick("cache_creation_input_tokens", base.cache_write),
    )


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
