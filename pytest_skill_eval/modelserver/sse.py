"""Server-sent events both ways, and what every stream parser shares.

Encoding (`sse_event`, `sse_data`, `pieces`) is used by the renderers of each wire format;
decoding (`SseDecoder`) and the `StreamParser` base with its `Collector` by each parser.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pytest_skill_eval.modelserver.script import ScriptedResponse, StopReason, ToolCall, Usage

NO_USAGE = Usage(input=0, output=0, cache_read=0, cache_write=0)
# Text and argument deltas are cut into pieces so the hosts' streaming parsers see real deltas.
PIECE = 64


def sse_data(payload: dict[str, Any]) -> bytes:
    """One `data:` event carrying `payload` as compact JSON."""
    return b"data: " + compact_json(payload).encode("utf-8") + b"\n\n"


def sse_event(event: str, payload: dict[str, Any]) -> bytes:
    """One named event (`event:` then `data:`)."""
    return f"event: {event}\n".encode() + sse_data(payload)


def compact_json(value: object) -> str:
    """JSON without spaces, UTF-8 text kept as is (as providers send it)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def pieces(text: str) -> list[str]:
    """`text` cut into deltas of `PIECE` characters."""
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)]


def halves(text: str) -> list[str]:
    """Two fragments, as real providers split arguments; the host must join them."""
    mid = len(text) // 2
    return [part for part in (text[:mid], text[mid:]) if part]


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
class PendingCall:
    """A tool call while its stream is parsed: arguments arrive as JSON text in pieces."""

    id: str | None = None
    name: str = ""
    arguments: str = ""
    initial: dict[str, Any] | None = None


@dataclass
class Collector:
    """What every parser gathers before building the neutral response."""

    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: dict[int, PendingCall] = field(default_factory=dict)
    usage: Usage = NO_USAGE
    stop: StopReason | None = None
    events: int = 0
    problems: list[str] = field(default_factory=list)

    def build(self, complete: bool) -> ParsedStream:
        problems = list(self.problems)
        calls: list[ToolCall] = []
        for position in sorted(self.calls):
            call = self.calls[position]
            arguments = call_arguments(call, problems)
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
        self._state = Collector()
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

    def _counted_json(self, event: SseEvent) -> dict[str, Any] | None:
        """Count `event`; its data as a JSON object, or None (a problem noted) when it is not."""
        self._state.events += 1
        data = json_object(event.data)
        if data is None:
            self._state.problems.append(f"an event is not a JSON object: {event.data[:80]!r}")
        return data


class TypedStreamParser(StreamParser):
    """A stream of JSON object events named by their `type` field, else by the SSE event name."""

    def _event(self, event: SseEvent) -> None:
        data = self._counted_json(event)
        if data is not None:
            self._typed(data.get("type", event.event), data)

    def _typed(self, kind: str | None, data: dict[str, Any]) -> None:
        raise NotImplementedError


def call_arguments(call: PendingCall, problems: list[str]) -> dict[str, Any]:
    """The arguments object of a finished call; a problem when its JSON is not an object."""
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


def count(value: object) -> int:
    """A token count from JSON: a non-negative int, 0 for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in `text`, or None when it is not one."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
