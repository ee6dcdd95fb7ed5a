"""Render neutral scripted responses into the streaming wire formats the hosts accept.

Chat completions and Anthropic messages as Pi 0.73.1 and Claude Code take them; the OpenAI
Responses API (Codex) is rendered by `responses`, the Gemini API (Gemini CLI) by `gemini`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from pytest_skill_eval.modelserver.gemini import GEMINI, error_body, gemini_chunks
from pytest_skill_eval.modelserver.responses import RESPONSES, responses_chunks
from pytest_skill_eval.modelserver.script import ScriptedResponse
from pytest_skill_eval.modelserver.sse import compact_json, halves, pieces, sse_data, sse_event

OPENAI = "openai-completions"
ANTHROPIC = "anthropic-messages"
OPENAI_RESPONSES = RESPONSES
# The formats Pi and Claude Code are configured with; Codex adds the Responses API, Gemini CLI
# the Gemini API.
APIS: tuple[str, ...] = (OPENAI, ANTHROPIC)
SERVED_APIS: tuple[str, ...] = (*APIS, OPENAI_RESPONSES, GEMINI)

_OPENAI_FINISH = {"stop": "stop", "tool_use": "tool_calls", "length": "length", "error": "error"}
_ANTHROPIC_STOP = {"stop": "end_turn", "tool_use": "tool_use", "length": "max_tokens"}
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit"}
STREAM_ERROR_MESSAGE = "scripted stream error"


@dataclass(frozen=True)
class WireReply:
    """An HTTP answer: status, headers and body pieces written in order."""

    status: int
    headers: tuple[tuple[str, str], ...]
    chunks: tuple[bytes, ...]

    @property
    def body(self) -> bytes:
        """The whole body as one bytes object."""
        return b"".join(self.chunks)


def render_stream(
    api: str,
    response: ScriptedResponse,
    *,
    model: str,
    request_index: int,
    custom_tools: Collection[str] = (),
) -> WireReply:
    """Render a response (already placeholder-filled) for `api`; an error reply becomes JSON.

    `custom_tools` names the freeform tools the request offers (Responses only): a call to one
    of them is rendered as a custom tool call carrying its `input` text.
    """
    if response.error is not None:
        return error_reply(api, response.error.status, response.error.message)
    if api == OPENAI:
        chunks = tuple(openai_chunks(response, model=model, request_index=request_index))
    elif api == ANTHROPIC:
        chunks = tuple(anthropic_chunks(response, model=model, request_index=request_index))
    elif api == OPENAI_RESPONSES:
        ids = [
            call.id or tool_call_id(api, request_index, i)
            for i, call in enumerate(response.tool_calls)
        ]
        chunks = tuple(
            responses_chunks(
                response,
                model=model,
                request_index=request_index,
                call_ids=ids,
                error_message=STREAM_ERROR_MESSAGE,
                custom=custom_tools,
            )
        )
    elif api == GEMINI:
        chunks = tuple(
            gemini_chunks(
                response,
                model=model,
                request_index=request_index,
                error_message=STREAM_ERROR_MESSAGE,
            )
        )
    else:
        raise ValueError(f"unsupported api {api!r}; expected one of {', '.join(SERVED_APIS)}")
    headers = (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"))
    return WireReply(status=200, headers=headers, chunks=chunks)


def error_reply(api: str, status: int, message: str) -> WireReply:
    """An HTTP error with the JSON error body of `api` (OpenAI's shape, which the Responses API
    shares, for every api but Anthropic's and Gemini's)."""
    body: dict[str, Any]
    if api == ANTHROPIC:
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        body = {"type": "error", "error": {"type": kind, "message": message}}
    elif api == GEMINI:
        body = error_body(status, message)
    else:
        kind = _OPENAI_ERROR_TYPES.get(status, "server_error")
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    headers = (("Content-Type", "application/json"),)
    return WireReply(status=status, headers=headers, chunks=(data,))


def tool_call_id(api: str, request_index: int, call_index: int) -> str:
    """The id given to a tool call that the script left without one."""
    prefix = "toolu" if api == ANTHROPIC else "call"
    return f"{prefix}_{request_index}_{call_index}"


def openai_chunks(response: ScriptedResponse, *, model: str, request_index: int) -> Iterator[bytes]:
    """OpenAI chat-completions SSE: role, reasoning, content, tool calls, finish, usage, [DONE]."""
    ident = f"chatcmpl-scripted-{request_index}"
    created = int(time.time())

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        payload: dict[str, Any] = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
            **extra,
        }
        return sse_data(payload)

    def delta(content: dict[str, Any]) -> bytes:
        return chunk([{"index": 0, "delta": content, "finish_reason": None}])

    yield delta({"role": "assistant", "content": ""})
    for piece in pieces(response.thinking or ""):
        yield delta({"reasoning_content": piece})
    for piece in pieces(response.text or ""):
        yield delta({"content": piece})
    for i, call in enumerate(response.tool_calls):
        call_id = call.id or tool_call_id(OPENAI, request_index, i)
        yield delta(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in halves(compact_json(call.arguments)):
            yield delta({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    finish = _OPENAI_FINISH[response.stop]
    yield chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
    usage = response.usage
    cached = usage.cache_read + usage.cache_write
    prompt = usage.input + cached
    details: dict[str, int] = {"cached_tokens": cached}
    if usage.cache_write:
        # pi-ai subtracts cache_write_tokens from cached_tokens to get cache reads.
        details["cache_write_tokens"] = usage.cache_write
    yield chunk(
        [],
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": usage.output,
            "total_tokens": prompt + usage.output,
            "prompt_tokens_details": details,
        },
    )
    yield b"data: [DONE]\n\n"


def anthropic_chunks(
    response: ScriptedResponse, *, model: str, request_index: int
) -> Iterator[bytes]:
    """Anthropic messages SSE: message_start, content blocks, message_delta, message_stop."""
    usage = response.usage
    yield sse_event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": f"msg_scripted_{request_index}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": usage.input,
                    "output_tokens": 0,
                    "cache_read_input_tokens": usage.cache_read,
                    "cache_creation_input_tokens": usage.cache_write,
                },
            },
        },
    )
    index = 0
    if response.thinking:
        yield from _anthropic_block(
            index,
            {"type": "thinking", "thinking": "", "signature": ""},
            [{"type": "thinking_delta", "thinking": p} for p in pieces(response.thinking)]
            + [{"type": "signature_delta", "signature": f"scripted-signature-{request_index}"}],
        )
        index += 1
    if response.text:
        yield from _anthropic_block(
            index,
            {"type": "text", "text": ""},
            [{"type": "text_delta", "text": p} for p in pieces(response.text)],
        )
        index += 1
    for i, call in enumerate(response.tool_calls):
        call_id = call.id or tool_call_id(ANTHROPIC, request_index, i)
        yield from _anthropic_block(
            index,
            {"type": "tool_use", "id": call_id, "name": call.name, "input": {}},
            [
                {"type": "input_json_delta", "partial_json": p}
                for p in halves(compact_json(call.arguments))
            ],
        )
        index += 1
    if response.stop == "error":
        # A stream that breaks after its content; the SDK turns this event into an error.
        yield sse_event(
            "error",
            {"type": "error", "error": {"type": "api_error", "message": STREAM_ERROR_MESSAGE}},
        )
        return
    yield sse_event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": _ANTHROPIC_STOP[response.stop], "stop_sequence": None},
            "usage": {
                "input_tokens": usage.input,
                "output_tokens": usage.output,
                "cache_read_input_tokens": usage.cache_read,
                "cache_creation_input_tokens": usage.cache_write,
            },
        },
    )
    yield sse_event("message_stop", {"type": "message_stop"})


def _anthropic_block(
    index: int, start: dict[str, Any], deltas: list[dict[str, Any]]
) -> Iterator[bytes]:
    yield sse_event(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": start},
    )
    for item in deltas:
        yield sse_event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": item}
        )
    yield sse_event("content_block_stop", {"type": "content_block_stop", "index": index})
