"""The neutral tools' argument schema: what a scripted call may pass to each."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_skill_eval.modelserver.script import ToolCall
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.tools import argument_problem, tool_argument_problems


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read", {"path": "a.txt"}),
        ("read", {"path": "a.txt", "offset": 2, "limit": 5}),
        ("write", {"path": "a.txt", "content": "yes"}),
        ("edit", {"path": "a.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
        ("edit", {"path": "a.txt", "oldText": "a", "newText": "b"}),
        ("skill", {"name": "answer-writer"}),
        ("run_command", {"command": "tests"}),
        ("Bash", {"anything": 1}),  # not a neutral tool: passed through unchecked
    ],
)
def test_calls_that_fit_the_schema_have_no_problem(name: str, arguments: dict[str, Any]) -> None:
    assert argument_problem(ToolCall(name, arguments)) is None


@pytest.mark.parametrize(
    ("name", "arguments", "problem"),
    [
        ("write", {"file": "a.txt", "content": "yes"}, "unknown argument 'file'"),
        ("write", {"path": "a.txt"}, "missing argument 'content'"),
        ("read", {"path": 3}, "argument 'path' must be a string"),
        ("read", {"path": "a", "limit": True}, "argument 'limit' must be an integer"),
        ("edit", {"path": "a", "edits": [{"old": "a", "new": "b"}]}, "must be a list of"),
        ("edit", {"path": "a"}, "give either 'edits' or both 'oldText' and 'newText'"),
        ("edit", {"path": "a", "oldText": "a"}, "give both 'oldText' and 'newText'"),
        ("skill", {}, "missing argument 'name'"),
    ],
)
def test_calls_that_do_not_fit_name_the_problem(
    name: str, arguments: dict[str, Any], problem: str
) -> None:
    found = argument_problem(ToolCall(name, arguments))
    assert found is not None
    assert problem in found


def test_each_wrong_call_is_reported_with_its_interaction_and_the_expected_arguments() -> None:
    script = parse_script(
        {
            "version": 1,
            "interactions": [
                {"response": {"text": "thinking"}},
                {"response": {"tool_calls": [{"name": "write", "arguments": {"file": "a"}}]}},
            ],
        }
    )
    assert tool_argument_problems(script) == [
        (2, "write", "unknown argument 'file'; write takes {path, content}")
    ]
