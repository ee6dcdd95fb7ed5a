"""Claude Code end to end: the real pinned binary against the scripted loopback server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.files import write
from tests.support.roots import Group, runtime, skill, variant
from tests.support.runs import model_requests, result_dir, run_candidate, run_record

pytestmark = [pytest.mark.pi, pytest.mark.claude]


def claude_runtime() -> dict[str, Any]:
    """A claude-code runtime profile with no bundles, session or declared environment."""
    return runtime(host="claude-code")


def anthropic_tool_results(request: dict[str, Any]) -> list[tuple[str, bool]]:
    """Each tool_result block the request carries (the history included): text, is_error."""
    results = []
    for message in request["body"]["messages"]:
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                parts = [inner] if isinstance(inner, str) else inner or []
                text = "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in parts)
                results.append((text, block.get("is_error") is True))
    return results


def test_declared_commands_run_through_the_evaluators_tool_server(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="commands",
        turns=["Check the notes."],
        tools=["read", "run_command"],
        runtime={**claude_runtime(), "environment": {"literal": {"GREETING": "hi"}, "inherit": []}},
        candidate=variant([declared], 0),
        commands=[
            {
                "id": "look",
                "argv": [
                    "sh",
                    "-c",
                    'echo "$GREETING from $(pwd)"; env | grep -c ^SKILL_EVAL_; true',
                ],
            },
            {"id": "fails", "argv": ["sh", "-c", "echo broken >&2; exit 3"]},
            {"id": "hangs", "argv": ["sleep", "60"], "timeout_ms": 300},
        ],
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "look"}}]},
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "fails"}}]},
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "hangs"}}]},
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "rm-rf"}}]},
                {"text": "Checked."},
            ]
        },
    )
    result = run_candidate(pytester, root, [group])
    assert result.ret == 0, result.stdout.str()

    run = run_record(root, "commands@claude-code", "candidate")
    assert run["state"] == "complete", run["error"]
    records = [a for turn in run["turns"] for a in turn["toolActivity"]]
    assert [(a["toolName"], a["args"], a["isError"]) for a in records] == [
        ("run_command", {"command": "look"}, False),
        ("run_command", {"command": "fails"}, False),  # a non-zero exit is an ordinary result
        ("run_command", {"command": "hangs"}, False),  # so is a timeout
        ("run_command", {"command": "rm-rf"}, True),  # an undeclared command is refused
    ]
    workspace = Path(run["workspace"]).resolve()
    requests = model_requests(result_dir(root) / "groups/commands@claude-code/candidate")
    assert len(requests) == 5
    offered = {t["name"] for t in requests[0]["body"]["tools"]}
    assert "mcp__skill-eval__run_command" in offered
    assert not offered & {"Bash", "WebFetch"}
    results = anthropic_tool_results(requests[4])
    assert results[0] == (
        "\n".join(
            [
                '$ sh -c echo "$GREETING from $(pwd)"; env | grep -c ^SKILL_EVAL_; true',
                "exit code: 0",
                "--- stdout ---",
                f"hi from {workspace}",  # the declared environment, cwd = the workspace
                "0",  # the evaluator's own variables are not the command's business
                "",
                "--- stderr ---",
                "",
            ]
        ),
        False,
    )
    assert results[1][0].splitlines()[:2] == ["$ sh -c echo broken >&2; exit 3", "exit code: 3"]
    assert results[2][0].splitlines()[1] == "timed out after 300 ms"
    refused, is_error = results[3]
    assert is_error
    assert "rm-rf" in refused
