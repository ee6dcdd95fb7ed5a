"""Record a Claude Code run from a provider on loopback, then replay it with `match: body`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall
from pytest_skill_eval.modelserver.wire import ANTHROPIC, render_stream
from tests.support.http import UpstreamRequest
from tests.support.recording import Provider, record, replay

pytestmark = [pytest.mark.pi, pytest.mark.claude]

CANARY = "sk-ant-upstream-canary-77c1"
PROVIDER = Provider("claude-code", "anthropic/claude-m1", "ANTHROPIC_API_KEY", CANARY, "x-api-key")
WORKING_DIRECTORY = re.compile(r"Primary working directory: ([^\s\\]+)")
Answer = Callable[[UpstreamRequest], tuple[int, str, list[bytes]]]


def _sse(response: ScriptedResponse, index: int) -> tuple[int, str, list[bytes]]:
    reply = render_stream(ANTHROPIC, response, model="claude-m1", request_index=index)
    return 200, "text/event-stream", list(reply.chunks)


def _read_notes(request: UpstreamRequest) -> tuple[int, str, list[bytes]]:
    # Like a real model: it reads at the absolute path of the working directory it was shown.
    match = WORKING_DIRECTORY.search(json.dumps(request.body["messages"]))
    assert match, "Claude Code names its working directory"
    call = ToolCall("Read", {"file_path": f"{match.group(1)}/notes.txt"})
    return _sse(ScriptedResponse(tool_calls=(call,), stop="tool_use"), 0)


def _text(text: str, index: int) -> Answer:
    return lambda request: _sse(ScriptedResponse(text=text), index)


def test_a_recorded_claude_code_run_replays_with_match_body(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = [_read_notes, _text("Tidied.", 1), _text("Nothing else.", 2)]
    recording = record(
        pytester,
        tmp_path,
        monkeypatch,
        PROVIDER,
        answers,
        tools=("read", "write"),
        turns=("Tidy the notes.", "Anything else?"),
    )
    assert "{{workspace}}/notes.txt" in recording.text, (
        "the recorded read points at the placeholder"
    )

    run = replay(pytester, recording, ["Tidied.", "Nothing else."])
    (read,) = run["turns"][0]["toolActivity"]
    assert read["isError"] is False
    assert read["args"]["path"] == f"{run['workspace']}/notes.txt"  # the new workspace
