"""Record an opencode run from a chat-completions provider on loopback, then replay it by body."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.recording import openai_provider, record, replay

pytestmark = pytest.mark.pi

PROVIDER = openai_provider("opencode", "openai/gpt-4o", "sk-proj-upstream-canary-0c17")


def _chat_sse(*, text: str | None = None, call: tuple[str, str] | None = None) -> bytes:
    """A chat-completions stream: one text, or one tool call (name, JSON arguments)."""
    head: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk"}
    head |= {"created": 1767312000, "model": "gpt-4o-2024-08-06"}
    delta: dict[str, Any] = {"role": "assistant", "content": text}
    if call is not None:
        function = {"name": call[0], "arguments": call[1]}
        tool_call = {"index": 0, "id": "call_up_1", "type": "function", "function": function}
        delta["tool_calls"] = [tool_call]
    finish = "tool_calls" if call is not None else "stop"
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    frames = [
        head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        head | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        head | {"choices": [], "usage": usage},
    ]
    return b"".join(f"data: {json.dumps(f)}\n\n".encode() for f in frames) + b"data: [DONE]\n\n"


def _sse(body: bytes) -> tuple[int, str, list[bytes]]:
    return 200, "text/event-stream", [body]


def test_a_recorded_opencode_run_replays_with_match_body(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = [
        _sse(_chat_sse(call=("read", json.dumps({"filePath": "notes.txt"})))),
        _sse(_chat_sse(text="Read.")),
        _sse(_chat_sse(text="Nothing else.")),
    ]
    # Three answers, three requests (`record` counts them): no title request went upstream.
    recording = record(pytester, tmp_path, monkeypatch, PROVIDER, answers)
    assert all(r.path == "/v1/chat/completions" for r in recording.requests)
    assert all(r.body["model"] == "gpt-4o" for r in recording.requests)
    assert "api: openai-completions" in recording.text

    replay(pytester, recording, ["Read.", "Nothing else."])
