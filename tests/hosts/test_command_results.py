"""A declared command's exit code, read back from its tool's result in each host's shape, and
graded and shown: `succeeded` means completed, no error, and exit code 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.definitions import ToolCallExpectation
from pytest_skill_eval.grading.interaction import grade_tool_call
from pytest_skill_eval.grading.support import Context
from pytest_skill_eval.hosts.command_results import exit_code_of
from pytest_skill_eval.hosts.observation import Observation
from pytest_skill_eval.views.present import tool_outcome

TEXT = "$ sh /skills/0/scripts/check.sh\nexit code: 2\n--- stdout ---\nexit code: 0\n"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (TEXT, (True, 2)),  # the status line, not a line the command printed
        ([{"type": "text", "text": TEXT}], (True, 2)),  # Claude Code's content blocks
        ({"content": [{"type": "text", "text": TEXT}]}, (True, 2)),  # Codex's and Pi's result
        ("$ sleep 9\nexit code: signal SIGKILL\n", (True, None)),
        ("$ sleep 9\ntimed out after 300 ms\n", (True, None)),
        ('Unknown command id: "x". Declared: a', (False, None)),
        (None, (False, None)),
    ],
)
def test_the_exit_code_is_read_from_the_status_line(
    output: object, expected: tuple[bool, int | None]
) -> None:
    assert exit_code_of(output) == expected


def test_only_a_declared_commands_activity_gets_an_exit_code() -> None:
    obs = Observation()
    obs.begin_turn(1, "go", "go")
    for call_id, name in (("a", "run_command"), ("b", "read"), ("c", "run_command")):
        obs.tool_started(call_id, name, {})
    assert obs.tool_ended("a", False, TEXT)["exitCode"] == 2  # type: ignore[index]
    assert "exitCode" not in (obs.tool_ended("b", False, TEXT) or {})
    assert "exitCode" not in (obs.tool_ended("c", True, "Unknown command id") or {})


def _grade(expect: str, *activities: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    run = {"state": "complete", "turns": [{"turn": 1, "toolActivity": list(activities)}]}
    expectation = ToolCallExpectation.model_validate(
        {
            "id": "ran",
            "kind": "tool-call",
            "variant": "candidate",
            "tool": "run_command",
            "expect": expect,
        }
    )
    check = grade_tool_call(expectation, Context("body", 1, "candidate", run, Path()))
    return check["state"], check["observed"]


def _command(**outcome: Any) -> dict[str, Any]:
    return {"toolName": "run_command", "args": {"command": "check"}, "completed": True, **outcome}


@pytest.mark.parametrize(
    ("activity", "succeeded"),
    [
        (_command(isError=False, exitCode=0), "pass"),
        (_command(isError=False, exitCode=2), "fail"),
        (_command(isError=False, exitCode=None), "fail"),  # killed or timed out
        (_command(isError=False), "pass"),  # evidence without the status line
        (_command(isError=True), "fail"),
    ],
)
def test_succeeded_means_exit_code_zero(activity: dict[str, Any], succeeded: str) -> None:
    state, observed = _grade("succeeded", activity)
    assert state == succeeded
    assert _grade("failed", activity)[0] == ("fail" if succeeded == "pass" else "pass")
    assert observed["calls"][0].get("exitCode", "absent") == activity.get("exitCode", "absent")
    # The run view and the reviewer's evidence say the same of the call.
    assert tool_outcome(activity) == ("succeeded" if succeeded == "pass" else "failed")
