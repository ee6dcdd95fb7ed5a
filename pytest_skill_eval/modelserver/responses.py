"""The OpenAI Responses API (`POST …/responses`): scripted answers rendered, real ones parsed.

The event shapes are those Codex 0.171.0 accepted from a loopback server, filled out with the
events OpenAI itself sends around them (content parts, argument deltas) so other clients of the
API (Pi's `openai-responses`) find what they expect. Output items come in a fixed order:
reasoning (its summary is the neutral `thinking`), the message, then the tool calls. A call to
a tool the request offers as `custom` (Codex's freeform `apply_patch`) is a `custom_tool_call`
whose `input` is the neutral call's `input` argument.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall, Usage
from pytest_skill_eval.modelserver.sse import (
    ParsedStream,
    PendingCall,
    TypedStreamParser,
    compact_json,
    count,
    halves,
    pieces,
    sse_event,
)

RESPONSES = "openai-responses"
# The neutral argument that carries a custom (freeform) tool call's text.
CUSTOM_INPUT = "input"
STREAM_ERROR_CODE = "server_error"


def custom_tools(body: Mapping[str, Any]) -> frozenset[str]:
    """The names of the freeform (`type: custom`) tools a Responses request offers."""
    tools = body.get("tools")
    return frozenset(
        tool["name"]
        for tool in (tools if isinstance(tools, list) else [])
        if isinstance(tool, dict)
        and tool.get("type") == "custom"
        and isinstance(tool.get("name"), str)
    )


def responses_chunks(
    response: ScriptedResponse,
    *,
    model: str,
    request_index: int,
    call_ids: list[str],
    error_message: str,
    custom: Collection[str] = (),
) -> Iterator[bytes]:
    """Responses SSE: created, each output item (added, deltas, done), then the final event.

    `call_ids` are the ids of the tool calls in order; `error_message` is what a `stop: error`
    answer's `response.failed` says.
    """
    sequence = iter(range(1 << 62))
    ident = f"resp_scripted_{request_index}"
    created = int(time.time())

    def event(kind: str, **fields: Any) -> bytes:
        return sse_event(kind, {"type": kind, "sequence_number": next(sequence), **fields})

    def envelope(status: str, output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": ident,
            "object": "response",
            "created_at": created,
            "status": status,
            "model": model,
            "output": output,
            **extra,
        }

    yield event("response.created", response=envelope("in_progress", []))
    done: list[dict[str, Any]] = []
    index = 0
    if response.thinking:
        item_id = f"rs_scripted_{request_index}_{index}"
        yield from _reasoning(event, index, item_id, response.thinking)
        done.append(_reasoning_item(item_id, response.thinking))
        index += 1
    if response.text:
        item_id = f"msg_scripted_{request_index}_{index}"
        yield from _message(event, index, item_id, response.text)
        done.append(_message_item(item_id, response.text, "completed"))
        index += 1
    for call, call_id in zip(response.tool_calls, call_ids, strict=True):
        if call.name in custom:
            item = _custom_call(call, call_id, f"ctc_scripted_{request_index}_{index}")
            yield from _streamed_item(event, index, item, "input", "custom_tool_call_input")
        else:
            item = _function_call(call, call_id, f"fc_scripted_{request_index}_{index}")
            yield from _streamed_item(event, index, item, "arguments", "function_call_arguments")
        done.append(item)
        index += 1
    usage = _usage_json(response.usage)
    if response.stop == "length":
        details = {"reason": "max_output_tokens"}
        final = envelope("incomplete", done, incomplete_details=details, usage=usage)
        yield event("response.incomplete", response=final)
    elif response.stop == "error":
        error = {"code": STREAM_ERROR_CODE, "message": error_message}
        yield event("response.failed", response=envelope("failed", done, error=error, usage=usage))
    else:
        yield event("response.completed", response=envelope("completed", done, usage=usage))


# The `event(kind, **fields)` closure of `responses_chunks`: one numbered SSE event.
_Event = Callable[..., bytes]


def _reasoning(event: _Event, index: int, item_id: str, text: str) -> Iterator[bytes]:
    where = {"item_id": item_id, "output_index": index, "summary_index": 0}
    yield event(
        "response.output_item.added",
        output_index=index,
        item={"type": "reasoning", "id": item_id, "summary": []},
    )
    part = {"type": "summary_text", "text": ""}
    yield event("response.reasoning_summary_part.added", **where, part=part)
    for piece in pieces(text):
        yield event("response.reasoning_summary_text.delta", **where, delta=piece)
    yield event("response.reasoning_summary_text.done", **where, text=text)
    yield event("response.reasoning_summary_part.done", **where, part={**part, "text": text})
    item = _reasoning_item(item_id, text)
    yield event("response.output_item.done", output_index=index, item=item)


def _reasoning_item(item_id: str, text: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": [{"type": "summary_text", "text": text}]}


def _message(event: _Event, index: int, item_id: str, text: str) -> Iterator[bytes]:
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    added = _message_item(item_id, None, "in_progress")
    yield event("response.output_item.added", output_index=index, item=added)
    part = {"type": "output_text", "text": "", "annotations": []}
    yield event("response.content_part.added", **where, part=part)
    for piece in pieces(text):
        yield event("response.output_text.delta", **where, delta=piece)
    yield event("response.output_text.done", **where, text=text)
    yield event("response.content_part.done", **where, part={**part, "text": text})
    item = _message_item(item_id, text, "completed")
    yield event("response.output_item.done", output_index=index, item=item)


def _message_item(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [{"type": "output_text", "text": text, "annotations": []}]
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _function_call(call: ToolCall, call_id: str, item_id: str) -> dict[str, Any]:
    item = {
        "type": "function_call",
        "id": item_id,
        "status": "completed",
        "name": call.name,
        "arguments": compact_json(dict(call.arguments)),
        "call_id": call_id,
    }
    return item | ({"namespace": call.namespace} if call.namespace is not None else {})


def _custom_call(call: ToolCall, call_id: str, item_id: str) -> dict[str, Any]:
    text = call.arguments.get(CUSTOM_INPUT)
    if not isinstance(text, str) or len(call.arguments) != 1:
        text = compact_json(dict(call.arguments))
    return {
        "type": "custom_tool_call",
        "id": item_id,
        "status": "completed",
        "call_id": call_id,
        "name": call.name,
        "input": text,
    }


def _streamed_item(
    event: _Event, index: int, item: dict[str, Any], key: str, delta_kind: str
) -> Iterator[bytes]:
    """A tool call: added with its text empty, the text in two deltas, done, then the item."""
    where = {"item_id": item["id"], "output_index": index}
    added = {**item, "status": "in_progress", key: ""}
    yield event("response.output_item.added", output_index=index, item=added)
    for piece in halves(item[key]):
        yield event(f"response.{delta_kind}.delta", **where, delta=piece)
    yield event(f"response.{delta_kind}.done", **where, **{key: item[key]})
    yield event("response.output_item.done", output_index=index, item=item)


def _usage_json(usage: Usage) -> dict[str, Any]:
    # Responses counts cached input inside input_tokens; cache writes have no field of their
    # own, so (as for chat completions) they ride along as `cache_write_tokens`.
    prompt = usage.input + usage.cache_read + usage.cache_write
    details: dict[str, int] = {"cached_tokens": usage.cache_read}
    if usage.cache_write:
        details["cache_write_tokens"] = usage.cache_write
    return {
        "input_tokens": prompt,
        "input_tokens_details": details,
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + usage.output,
    }


def responses_usage(raw: Mapping[str, Any]) -> Usage:
    """The neutral usage of a Responses `usage` object (the inverse of what is rendered)."""
    details = raw.get("input_tokens_details")
    details = details if isinstance(details, dict) else {}
    read = count(details.get("cached_tokens"))
    write = count(details.get("cache_write_tokens"))
    return Usage(
        input=max(0, count(raw.get("input_tokens")) - read - write),
        output=count(raw.get("output_tokens")),
        cache_read=read,
        cache_write=write,
    )


@dataclass
class _Item:
    """One output item while it streams; `output_item.done` replaces what deltas built."""

    kind: str
    text: list[str] = field(default_factory=list)
    call: PendingCall | None = None
    custom: bool = False


class ResponsesStreamParser(TypedStreamParser):
    """Responses events: output items by `output_index`, then completed, incomplete or failed."""

    api = RESPONSES

    def __init__(self) -> None:
        super().__init__()
        self._items: dict[int, _Item] = {}

    def _typed(self, kind: str | None, data: dict[str, Any]) -> None:
        state = self._state
        index = data.get("output_index")
        delta = data.get("delta")
        if kind in ("response.output_item.added", "response.output_item.done"):
            self._item(index, data.get("item"), done=kind.endswith("done"))
        elif isinstance(delta, str) and isinstance(index, int):
            self._delta(kind, index, delta)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self._final(kind, data.get("response"))
        elif kind == "error":
            state.stop = "error"
            self.done = True
            self._collect()

    def _item(self, index: object, raw: object, *, done: bool) -> None:
        if not isinstance(index, int) or not isinstance(raw, dict):
            return
        kind = str(raw.get("type"))
        if not done and index in self._items:
            return
        item = _Item(kind)
        if kind == "message":
            item.text = [_output_text(raw.get("content"))] if done else []
        elif kind == "reasoning":
            item.text = [_summary_text(raw)] if done else []
        elif kind in ("function_call", "custom_tool_call"):
            key = "arguments" if kind == "function_call" else "input"
            value = raw.get(key)
            item.custom = kind == "custom_tool_call"
            item.call = PendingCall(
                id=raw["call_id"] if isinstance(raw.get("call_id"), str) else None,
                name=raw["name"] if isinstance(raw.get("name"), str) else "",
                arguments=value if isinstance(value, str) else "",
            )
        self._items[index] = item

    def _delta(self, kind: object, index: int, delta: str) -> None:
        item = self._items.get(index)
        if item is None:
            return
        if kind in (
            "response.output_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_text.delta",
        ):
            item.text.append(delta)
        elif item.call is not None and kind in (
            "response.function_call_arguments.delta",
            "response.custom_tool_call_input.delta",
        ):
            item.call.arguments += delta

    def _final(self, kind: str, raw: object) -> None:
        state = self._state
        envelope = raw if isinstance(raw, dict) else {}
        usage = envelope.get("usage")
        if isinstance(usage, dict):
            state.usage = responses_usage(usage)
        if kind == "response.failed":
            state.stop = "error"
        elif kind == "response.incomplete":
            state.stop = "length"
        else:
            calls = any(item.call is not None for item in self._items.values())
            state.stop = "tool_use" if calls else "stop"
        self.done = True
        self._collect()

    def finish(self) -> ParsedStream:
        """The neutral response; items are collected even when the stream was cut short."""
        if not self.done:
            for event in self._decoder.close():
                self._event(event)
            if not self.done:
                self._collect()
        return super().finish()

    def _collect(self) -> None:
        state = self._state
        state.text, state.thinking, state.calls = [], [], {}
        for position, index in enumerate(sorted(self._items)):
            item = self._items[index]
            if item.kind == "message":
                state.text.append("".join(item.text))
            elif item.kind == "reasoning":
                state.thinking.append("".join(item.text))
            elif item.call is not None:
                call = item.call
                if item.custom:
                    call = PendingCall(
                        call.id, call.name, compact_json({CUSTOM_INPUT: call.arguments})
                    )
                state.calls[position] = call


def _output_text(content: object) -> str:
    parts = content if isinstance(content, list) else []
    return "".join(
        part["text"]
        for part in parts
        if isinstance(part, dict)
        and part.get("type") == "output_text"
        and isinstance(part.get("text"), str)
    )


def _summary_text(item: Mapping[str, Any]) -> str:
    # The summary is what a client shows; raw reasoning text (`content`) when there is none.
    for key, kind in (("summary", "summary_text"), ("content", "reasoning_text")):
        parts = item.get(key)
        texts = [
            p["text"]
            for p in (parts if isinstance(parts, list) else [])
            if isinstance(p, dict) and p.get("type") == kind and isinstance(p.get("text"), str)
        ]
        if texts:
            return "\n\n".join(texts)
    return ""
