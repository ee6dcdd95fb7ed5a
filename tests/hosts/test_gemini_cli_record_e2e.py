"""Record a Gemini CLI run from a Gemini API provider on loopback, then replay it by body."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.modelserver.gemini import GEMINI
from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall
from pytest_skill_eval.modelserver.wire import render_stream
from tests.support.recording import Provider, record, replay

pytestmark = [pytest.mark.pi, pytest.mark.gemini]

CANARY = "AIza-upstream-canary-77c1"
PROVIDER = Provider(
    "gemini-cli", "google/gemini-2.5-flash", "GEMINI_API_KEY", CANARY, "x-goog-api-key"
)


def _sse(response: ScriptedResponse) -> tuple[int, str, list[bytes]]:
    reply = render_stream(GEMINI, response, model="gemini-2.5-flash", request_index=0)
    return 200, "text/event-stream", list(reply.chunks)


def test_a_recorded_gemini_cli_run_replays_with_match_body(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = ToolCall("read_file", {"file_path": "notes.txt"})
    answers = [
        _sse(ScriptedResponse(tool_calls=(read,), stop="tool_use")),
        _sse(ScriptedResponse(text="Read.")),
        _sse(ScriptedResponse(text="Nothing else.")),
    ]
    recording = record(pytester, tmp_path, monkeypatch, PROVIDER, answers)
    stream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"  # (`?alt=sse` follows)
    assert all(r.path == stream for r in recording.requests)
    assert "api: gemini-generate-content" in recording.text

    # The body match ignores what differs from run to run: the date, the isolated home, the
    # workspace and Gemini CLI's call ids.
    replay(pytester, recording, ["Read.", "Nothing else."])
