"""Claude Code's token counts recorded from a provider on loopback and replayed by body: the
replay answers the count the provider gave, so the model gets as much of a large Read as it
did when recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.hosts.test_claude_code_record_e2e import PROVIDER, _read_notes, _text
from tests.support import runs
from tests.support.http import UpstreamRequest
from tests.support.recording import record, replay
from tests.support.runs import results

pytestmark = [pytest.mark.pi, pytest.mark.claude]

# About 46 KB: Claude Code asks the provider to count it before the model may see it whole.
NOTES = "".join(f"Line {i:04d}: a note long enough to make the file large.\n" for i in range(800))
# Over any model's room: Claude Code hands the model only the first lines of the file.
COUNTED = 900_000


def _count(request: UpstreamRequest) -> tuple[int, str, list[bytes]]:
    assert request.path == "/v1/messages/count_tokens", request.path
    return 200, "application/json", [f'{{"input_tokens": {COUNTED}}}'.encode()]


def test_a_recorded_count_is_replayed_and_the_read_ends_as_recorded(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(NOTES) > 40_000
    answers = [_read_notes, _count, _text("Tidied.", 1), _text("Nothing else.", 2)]
    recording = record(
        pytester,
        tmp_path,
        monkeypatch,
        PROVIDER,
        answers,
        tools=("read", "write"),
        turns=("Tidy the notes.", "Anything else?"),
        notes=NOTES,
    )
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
