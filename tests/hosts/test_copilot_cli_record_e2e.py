"""Record a Copilot CLI run from a chat-completions provider on loopback, then replay it by
body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hosts.test_host_record_e2e import _chat_sse, _sse
from tests.support.recording import openai_provider, record, replay

pytestmark = pytest.mark.pi

PROVIDER = openai_provider("copilot-cli", "openai/gpt-4o", "sk-proj-upstream-canary-0c17")


def test_a_recorded_copilot_cli_run_replays_with_match_body(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Arguments as a provider streams them, compact: Copilot CLI sends them back as received,
    # and a replay streams the recorded call compact.
    arguments = json.dumps({"path": "notes.txt"}, separators=(",", ":"))
    answers = [
        _sse(_chat_sse(call=("view", arguments))),
        _sse(_chat_sse(text="Read.")),
        _sse(_chat_sse(text="Nothing else.")),
    ]
    # Three answers, three requests (`record` counts them): nothing else went upstream.
    recording = record(pytester, tmp_path, monkeypatch, PROVIDER, answers)
    assert all(r.path == "/v1/chat/completions" for r in recording.requests)
    assert all(r.body["model"] == "gpt-4o" for r in recording.requests)
    assert "api: openai-completions" in recording.text

    replay(pytester, recording, ["Read.", "Nothing else."])
