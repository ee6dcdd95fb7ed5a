"""Record each host's run from a provider on loopback in its own wire format, then replay the
cassette with `match: body` (Pi's own: `tests/plugin/test_record_replay.py`).

What every host shares is `tests/support/recording.py`; what differs is a row of `HOSTS`: the
provider, its three answers (a read of `notes.txt`, then a reply for each turn), the path every
request took upstream and the API the cassette names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.modelserver.gemini import GEMINI
from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall
from pytest_skill_eval.modelserver.wire import ANTHROPIC, render_stream
from tests.support.hosts import host_params
from tests.support.http import Scripted, UpstreamRequest, responses_sse
from tests.support.recording import Provider, Recording, openai_provider, record, replay

pytestmark = pytest.mark.pi

Answer = tuple[int, str, list[bytes]]
WORKING_DIRECTORY = re.compile(r"Primary working directory: ([^\s\\]+)")


def _sse(*chunks: bytes) -> Answer:
    return 200, "text/event-stream", list(chunks)


def _rendered(api: str, model: str, response: ScriptedResponse, index: int = 0) -> Answer:
    return _sse(*render_stream(api, response, model=model, request_index=index).chunks)


def _claude_read(request: UpstreamRequest) -> Answer:
    # Like a real model: it reads at the absolute path of the working directory it was shown.
    match = WORKING_DIRECTORY.search(json.dumps(request.body["messages"]))
    assert match, "Claude Code names its working directory"
    call = ToolCall("Read", {"file_path": f"{match.group(1)}/notes.txt"})
    return _rendered(ANTHROPIC, "claude-m1", ScriptedResponse(tool_calls=(call,), stop="tool_use"))


def _claude_code() -> list[Scripted]:
    def text(reply: str, index: int) -> Callable[[UpstreamRequest], Answer]:
        return lambda request: _rendered(
            ANTHROPIC, "claude-m1", ScriptedResponse(text=reply), index
        )

    return [_claude_read, text("Tidied.", 1), text("Nothing else.", 2)]


def _codex() -> list[Scripted]:
    read = ("exec_command", json.dumps({"cmd": "cat notes.txt"}), "call_up_1")
    return [
        _sse(responses_sse(call=read)),
        _sse(responses_sse(text="Read.")),
        _sse(responses_sse(text="Nothing else.")),
    ]


def _gemini_cli() -> list[Scripted]:
    read = ToolCall("read_file", {"file_path": "notes.txt"})
    flash = "gemini-2.5-flash"
    return [
        _rendered(GEMINI, flash, ScriptedResponse(tool_calls=(read,), stop="tool_use")),
        _rendered(GEMINI, flash, ScriptedResponse(text="Read.")),
        _rendered(GEMINI, flash, ScriptedResponse(text="Nothing else.")),
    ]


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


def _opencode() -> list[Scripted]:
    # Three answers, three requests (`record` counts them): no title request went upstream.
    return [
        _sse(_chat_sse(call=("read", json.dumps({"filePath": "notes.txt"})))),
        _sse(_chat_sse(text="Read.")),
        _sse(_chat_sse(text="Nothing else.")),
    ]


def _claude_code_replayed(recording: Recording, run: dict[str, Any]) -> None:
    assert "{{workspace}}/notes.txt" in recording.text, "the recorded read is the placeholder's"
    (read,) = run["turns"][0]["toolActivity"]
    assert read["isError"] is False
    assert read["args"]["path"] == f"{run['workspace']}/notes.txt"  # the new workspace


def _opencode_recorded(recording: Recording, run: dict[str, Any]) -> None:
    assert all(r.body["model"] == "gpt-4o" for r in recording.requests)


@dataclass(frozen=True)
class Host:
    """One host's recording: its provider, answers and what its cassette shows."""

    provider: Provider
    answers: Callable[[], list[Scripted]]
    replies: tuple[str, str] = ("Read.", "Nothing else.")
    path: str | None = None  # every request's path upstream (a query may follow)
    api: str | None = None  # the API the cassette names
    options: Mapping[str, Any] = field(default_factory=dict)  # `record`'s
    checks: Callable[[Recording, dict[str, Any]], None] = lambda recording, run: None


HOSTS = {
    "claude-code": Host(
        Provider(
            "claude-code",
            "anthropic/claude-m1",
            "ANTHROPIC_API_KEY",
            "sk-ant-upstream-canary-77c1",
            "x-api-key",
        ),
        _claude_code,
        replies=("Tidied.", "Nothing else."),
        options={"tools": ("read", "write"), "turns": ("Tidy the notes.", "Anything else?")},
        checks=_claude_code_replayed,
    ),
    "codex": Host(
        openai_provider("codex", "openai/gpt-5.5", "sk-proj-upstream-canary-41d9"),
        _codex,
        path="/v1/responses",
        api="openai-responses",
    ),
    # The body match ignores what differs from run to run: the date, the isolated home, the
    # workspace and Gemini CLI's call ids.
    "gemini-cli": Host(
        Provider(
            "gemini-cli",
            "google/gemini-2.5-flash",
            "GEMINI_API_KEY",
            "AIza-upstream-canary-77c1",
            "x-goog-api-key",
        ),
        _gemini_cli,
        path="/v1beta/models/gemini-2.5-flash:streamGenerateContent",  # `?alt=sse` follows
        api="gemini-generate-content",
    ),
    "opencode": Host(
        openai_provider("opencode", "openai/gpt-4o", "sk-proj-upstream-canary-0c17"),
        _opencode,
        path="/v1/chat/completions",
        api="openai-completions",
        checks=_opencode_recorded,
    ),
}


@pytest.mark.parametrize("name", host_params(HOSTS))
def test_a_recorded_run_replays_with_match_body(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    host = HOSTS[name]
    recording = record(
        pytester, tmp_path, monkeypatch, host.provider, host.answers(), **host.options
    )
    if host.path is not None:
        assert all(r.path == host.path for r in recording.requests)
    if host.api is not None:
        assert f"api: {host.api}" in recording.text

    run = replay(pytester, recording, list(host.replies))
    host.checks(recording, run)
