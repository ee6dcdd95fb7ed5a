"""The tool errors a host reported, read back from a run's evidence in each host's form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.evidence import layout
from pytest_skill_eval.views.toolerrors import LIMIT, tool_errors


def _run(directory: Path, transcript: list[Any], *calls: tuple[str, str, bool]) -> Path:
    activity = [
        {"toolCallId": i, "toolName": n, "args": {}, "completed": True, "isError": e}
        for i, n, e in calls
    ]
    directory.mkdir()
    run = {"state": "complete", "turns": [{"turn": 1, "toolActivity": activity}]}
    (directory / layout.RUN).write_text(json.dumps(run))
    (directory / layout.TRANSCRIPT).write_text(json.dumps(transcript))
    return directory


PI = [
    {"role": "toolResult", "toolCallId": "a", "isError": False, "content": "fine"},
    {
        "role": "toolResult",
        "toolCallId": "b",
        "isError": True,
        "content": [{"type": "text", "text": 'Validation failed for tool "write":\n  path: must'}],
    },
]
CLAUDE = [
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "b", "is_error": True, "content": "denied"}
        ],
    }
]


@pytest.mark.parametrize(
    ("transcript", "expected"),
    [
        (PI, 'write: Validation failed for tool "write": path: must'),
        (CLAUDE, "write: denied"),
    ],
)
def test_only_failed_calls_are_named_with_the_hosts_text(
    tmp_path: Path, transcript: list[Any], expected: str
) -> None:
    directory = _run(tmp_path / "v", transcript, ("a", "read", False), ("b", "write", True))
    assert tool_errors(directory) == [expected]


def test_an_error_text_is_one_bounded_line(tmp_path: Path) -> None:
    long = [{"role": "toolResult", "toolCallId": "b", "content": "x\n" * 1000}]
    (line,) = tool_errors(_run(tmp_path / "v", long, ("b", "edit", True)))
    assert "\n" not in line
    assert len(line) == len("edit: ") + LIMIT


def test_a_run_without_evidence_has_none(tmp_path: Path) -> None:
    assert tool_errors(tmp_path / "missing") == []
