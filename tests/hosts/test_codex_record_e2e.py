"""Record a Codex run from a Responses API provider on loopback, then replay it by body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.http import responses_sse
from tests.support.recording import openai_provider, record, replay

pytestmark = [pytest.mark.pi, pytest.mark.codex]

PROVIDER = openai_provider("codex", "openai/gpt-5.5", "sk-proj-upstream-canary-41d9")


def _sse(body: bytes) -> tuple[int, str, list[bytes]]:
    return 200, "text/event-stream", [body]


def test_a_recorded_codex_run_replays_with_match_body(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = ("exec_command", json.dumps({"cmd": "cat notes.txt"}), "call_up_1")
    answers = [
        _sse(responses_sse(call=read)),
        _sse(responses_sse(text="Read.")),
        _sse(responses_sse(text="Nothing else.")),
    ]
    recording = record(pytester, tmp_path, monkeypatch, PROVIDER, answers)
    assert all(r.path == "/v1/responses" for r in recording.requests)
    assert "api: openai-responses" in recording.text

    replay(pytester, recording, ["Read.", "Nothing else."])
