"""The Gemini API (`POST …/v1beta/models/<model>:streamGenerateContent?alt=sse`): scripted
answers rendered, real ones parsed.

The shapes are those Gemini CLI 0.61.0 accepted from a loopback server: every event is one
`data:` line holding a `GenerateContentResponse` whose first candidate carries `parts` (text,
thought text with `thought: true`, `functionCall {name, args}`); the last one has the
`finishReason` and `usageMetadata`. The model is named by the path, not the body. An error is
the Google error body (`{"error": {"code", "message", "status"}}`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pytest_skill_eval.modelserver.script import ScriptedResponse, Usage
from pytest_skill_eval.modelserver.sse import (
    PendingCall,
    SseEvent,
    StreamParser,
    compact_json,
    count,
    json_object,
    pieces,
    sse_data,
)

GEMINI = "gemini-generate-content"
# Below a route: the streaming call of one model (the CLI always streams).
GEMINI_PATH = re.compile(r"^/v1beta/models/([A-Za-z0-9._-]+):streamGenerateContent$")
GEMINI_SERVED_PATH = "/v1beta/models/<model>:streamGenerateContent"
_FINISH = {"stop": "STOP", "tool_use": "STOP", "length": "MAX_TOKENS", "error": "OTHER"}
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def stream_url(base_url: str, model: str) -> str:
    """The provider URL that streams `model`'s answers below the API's `base_url`."""
    return f"{base_url.rstrip('/')}/v1beta/models/{model}:streamGenerateContent?alt=sse"


def model_of(path: str) -> str | None:
    """The model a Gemini request path names (None: not a Gemini streaming path)."""
    match = GEMINI_PATH.match(path)
    return match.group(1) if match else None


def function_names(body: Mapping[str, Any]) -> set[str]:
    """The function names a Gemini request offers (`tools[].functionDeclarations[].name`)."""
    names: set[str] = set()
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declaration in declarations if isinstance(declarations, list) else []:
            name = declaration.get("name") if isinstance(declaration, dict) else None
            if isinstance(name, str):
                names.add(name)
    return names


def error_body(status: int, message: str) -> dict[str, Any]:
    """Google's JSON error body for an HTTP error."""
    return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}


def usage_metadata(usage: Usage) -> dict[str, int]:
    """The neutral usage as Gemini counts it: cached tokens are part of the prompt."""
    prompt = usage.input + usage.cache_read + usage.cache_write
    metadata = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": usage.output,
        "totalTokenCount": prompt + usage.output,
    }
    if usage.cache_read:
        metadata["cachedContentTokenCount"] = usage.cache_read
    return metadata


def gemini_chunks(
    response: ScriptedResponse, *, model: str, request_index: int, error_message: str
) -> Iterator[bytes]:
    """Gemini SSE: thought and text pieces, the function calls, then the finish with usage."""
    ident = f"scripted-{request_index}"

    def chunk(parts: list[dict[str, Any]], **extra: Any) -> bytes:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        candidate.update(extra.pop("candidate", {}))
        payload = {"candidates": [candidate], "modelVersion": model, "responseId": ident}
        return sse_data(payload | extra)

    for piece in pieces(response.thinking or ""):
        yield chunk([{"text": piece, "thought": True}])
    for piece in pieces(response.text or ""):
        yield chunk([{"text": piece}])
    if response.stop == "error":
        # A stream that breaks after its content: the SDK throws on an error payload.
        yield sse_data(error_body(500, error_message))
        return
    calls = [
        {"functionCall": {"name": c.name, "args": dict(c.arguments)}} for c in response.tool_calls
    ]
    finish = {"finishReason": _FINISH[response.stop]}
    yield chunk(calls, candidate=finish, usageMetadata=usage_metadata(response.usage))


class GeminiStreamParser(StreamParser):
    """A real Gemini stream (while recording) back to the neutral response."""

    api = GEMINI

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0

    def _event(self, event: SseEvent) -> None:
        data = json_object(event.data)
        if data is None:
            return
        state = self._state
        state.events += 1
        error = data.get("error")
        if isinstance(error, dict):
            state.stop = "error"
            state.problems.append(f"stream error: {error.get('message') or 'error'}")
            return
        candidates = data.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        content = first.get("content") if isinstance(first, dict) else None
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else []:
            self._part(part)
        finish = first.get("finishReason") if isinstance(first, dict) else None
        if isinstance(finish, str):
            state.stop = "length" if finish == "MAX_TOKENS" else "stop"
            self.done = True
        usage = data.get("usageMetadata")
        if isinstance(usage, dict):
            state.usage = _usage(usage)

    def _part(self, part: Any) -> None:
        if not isinstance(part, dict):
            return
        state = self._state
        call = part.get("functionCall")
        if isinstance(call, dict):
            arguments = call.get("args") if isinstance(call.get("args"), dict) else {}
            state.calls[self._calls] = PendingCall(
                id=call.get("id") if isinstance(call.get("id"), str) else None,
                name=str(call.get("name") or ""),
                arguments=compact_json(arguments),
                initial=None,
            )
            self._calls += 1
        elif isinstance(part.get("text"), str):
            (state.thinking if part.get("thought") is True else state.text).append(part["text"])


def _usage(raw: Mapping[str, Any]) -> Usage:
    cached = count(raw.get("cachedContentTokenCount"))
    prompt = count(raw.get("promptTokenCount"))
    output = count(raw.get("candidatesTokenCount")) + count(raw.get("thoughtsTokenCount"))
    return Usage(input=max(0, prompt - cached), output=output, cache_read=cached, cache_write=0)
