"""Record the token counts Claude Code asks before a large Read from a provider on loopback, then
replay them with `match: body` (the record-and-replay case every host shares is in
test_host_record_e2e.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall
from pytest_skill_eval.modelserver.wire import ANTHROPIC, render_stream
from tests.support import runs
from tests.support.http import UpstreamRequest
from tests.support.recording import Provider, Recording, record, replay
from tests.support.runs import results

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


def _record(
    pytester: pytest.Pytester,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answers: list[Answer],
    notes: str = "alpha\n",
) -> Recording:
    """Record two turns on Claude Code: the model reads notes.txt (holding `notes`), then
    answers "Tidied." and "Nothing else." (`answers` are the provider's, in order)."""
    return record(
        pytester,
        tmp_path,
        monkeypatch,
        PROVIDER,
        answers,
        tools=("read", "write"),
        turns=("Tidy the notes.", "Anything else?"),
        notes=notes,
    )


# About 46 KB: Claude Code asks the provider to count it before the model may see it whole.
NOTES = "".join(f"Line {i:04d}: a note long enough to make the file large.\n" for i in range(800))
# Over any model's room: Claude Code hands the model only the first lines of the file.
COUNTED = 900_000


def _count(request: UpstreamRequest) -> tuple[int, str, list[bytes]]:
    assert request.path == "/v1/messages/count_tokens", request.path
    return 200, "application/json", [f'{{"input_tokens": {COUNTED}}}'.encode()]


def test_a_recorded_token_count_is_replayed_by_body(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay answers the count the provider gave, so the model gets as much of a large
    Read as it did when recorded."""
    assert len(NOTES) > 40_000
    answers = [_read_notes, _count, _text("Tidied.", 1), _text("Nothing else.", 2)]
    recording = _record(pytester, tmp_path, monkeypatch, answers, notes=NOTES)
    (counted,) = yaml.safe_load(recording.text)["token_counts"]
    assert counted["input_tokens"] == COUNTED
    assert NOTES.splitlines()[0] in yaml.safe_dump(counted["request"]["body"])
    recorded = _read_result(recording.result)
    assert 0 < len(recorded.splitlines()) < 100  # cut by the count

    replay(pytester, recording, ["Tidied.", "Nothing else."])
    # By body: the request after the Read holds what the recorded count let through.
    assert _read_result(results(recording.root)[-1]) == recorded


def _read_result(result: Path) -> str:
    """The Read's result as the model received it in the request after the Read."""
    requests = runs.model_requests(result / "groups" / "rec@claude-code" / "candidate")
    blocks = [
        block
        for message in requests[1]["body"]["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    (block,) = blocks
    text: str = block["content"]
    return text
