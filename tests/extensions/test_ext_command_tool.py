"""command_tool.mjs in the real Pi: declared commands run in the workspace with a capped output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.pi.extensions import COMMAND_TOOL, GUARD
from tests.support.shared import shared_pi_run

pytestmark = pytest.mark.pi

PY = sys.executable
EURO_COUNT = 20000
BIG_BYTES = 1 + 3 * EURO_COUNT
# 32768 bytes would end one byte into a three-byte character, which must be dropped whole.
KEPT_BYTES = 32767

COMMANDS: list[dict[str, Any]] = [
    {"id": "ok", "argv": [PY, "-c", "import os; print('hello'); print(os.getcwd())"]},
    {"id": "fail", "argv": [PY, "-c", "import sys; sys.stderr.write('bad thing\\n'); sys.exit(3)"]},
    {"id": "slow", "argv": [PY, "-c", "import time; time.sleep(60)"], "timeout_ms": 300},
    {
        "id": "big",
        "argv": [
            PY,
            "-c",
            f"import sys; sys.stdout.buffer.write(('a' + '€' * {EURO_COUNT}).encode())",
        ],
    },
    {"id": "env", "argv": [PY, "-c", "import os, json; print(json.dumps(sorted(os.environ)))"]},
    {"id": "missing", "argv": ["/nonexistent/skill-eval-no-such-program"]},
]


def run_command(ident: str, command: str) -> dict[str, Any]:
    return {"id": ident, "name": "run_command", "arguments": {"command": command}}


def _command_run(pi_launcher: Any, base: Path) -> Any:
    """One Pi run calling every declared command, plus an undeclared id."""
    sandbox = pi_launcher.sandbox(base)
    calls = [run_command(f"c_{c['id']}", str(c["id"])) for c in COMMANDS]
    calls.append(run_command("c_unknown", "rm-rf"))
    script = {
        "version": 1,
        "interactions": [
            {"response": {"text": "Running.", "tool_calls": calls}},
            {"response": {"text": "done"}},
        ],
    }
    env = {"SKILL_EVAL_COMMANDS": json.dumps(COMMANDS), "LITERAL_SETTING": "kept"}
    return pi_launcher.run_json(
        sandbox,
        script,
        ["Run the commands."],
        extensions=[GUARD, COMMAND_TOOL],
        tools=["run_command"],
        env=env,
    ).passed()


command_run = shared_pi_run("command-tool", _command_run)


def argv_line(ident: str) -> str:
    [command] = [c for c in COMMANDS if c["id"] == ident]
    return "$ " + " ".join(command["argv"])


def test_success_reports_exit_code_and_output(command_run: Any) -> None:
    outcome = command_run.tool_outcomes()["c_ok"]
    assert not outcome.is_error
    workspace = command_run.sandbox.workspace
    assert outcome.text == (
        f"{argv_line('ok')}\nexit code: 0\n--- stdout ---\nhello\n{workspace}\n\n--- stderr ---\n"
    )
    assert outcome.details == {
        "id": "ok",
        "argv": COMMANDS[0]["argv"],
        "exitCode": 0,
        "signal": None,
        "timedOut": False,
        "stdout": {"bytes": len(f"hello\n{workspace}\n".encode()), "truncated": False},
        "stderr": {"bytes": 0, "truncated": False},
    }


def test_nonzero_exit_is_a_normal_result(command_run: Any) -> None:
    outcome = command_run.tool_outcomes()["c_fail"]
    assert not outcome.is_error
    assert outcome.text == (
        f"{argv_line('fail')}\nexit code: 3\n--- stdout ---\n\n--- stderr ---\nbad thing\n"
    )
    assert outcome.details["exitCode"] == 3


def test_timeout_stops_the_command_and_is_a_normal_result(command_run: Any) -> None:
    outcome = command_run.tool_outcomes()["c_slow"]
    assert not outcome.is_error
    assert outcome.text.splitlines()[1] == "timed out after 300 ms"
    assert outcome.details["timedOut"] is True
    assert outcome.details["exitCode"] is None
    assert outcome.details["signal"] == "SIGTERM"


def test_truncation_keeps_whole_utf8_characters(command_run: Any) -> None:
    outcome = command_run.tool_outcomes()["c_big"]
    assert not outcome.is_error
    header = f"--- stdout (truncated: showing {KEPT_BYTES} of {BIG_BYTES} bytes) ---\n"
    assert header in outcome.text
    shown = outcome.text.split(header, 1)[1].split("\n--- stderr ---", 1)[0]
    assert shown == "a" + "€" * ((KEPT_BYTES - 1) // 3)
    assert "\ufffd" not in outcome.text
    assert outcome.details["stdout"] == {"bytes": BIG_BYTES, "truncated": True}


def test_command_environment_has_no_evaluator_variables(command_run: Any) -> None:
    outcome = command_run.tool_outcomes()["c_env"]
    assert not outcome.is_error
    names = json.loads(outcome.text.split("--- stdout ---\n", 1)[1].split("\n", 1)[0])
    assert [name for name in names if name.startswith("SKILL_EVAL_")] == []
    assert {"HOME", "PATH", "PI_OFFLINE", "LITERAL_SETTING"} <= set(names)


def test_spawn_failure_is_a_tool_error(command_run: Any) -> None:
    outcome = command_run.tool_outcomes()["c_missing"]
    assert outcome.is_error
    assert "cannot start command missing" in outcome.text
    assert "ENOENT" in outcome.text


def test_undeclared_command_id_is_a_tool_error(command_run: Any) -> None:
    outcome = command_run.tool_outcomes()["c_unknown"]
    assert outcome.is_error
    assert "rm-rf" in outcome.text


def test_tool_schema_lists_only_the_declared_ids(command_run: Any) -> None:
    tools = command_run.requests[0].body["tools"]
    [tool] = [t["function"] for t in tools if t["function"]["name"] == "run_command"]
    assert tool["parameters"] == {
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "enum": [c["id"] for c in COMMANDS],
                "description": "ID of the declared command to run",
            }
        },
        "required": ["command"],
        "additionalProperties": False,
    }
