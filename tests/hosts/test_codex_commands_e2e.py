"""Declared commands on Codex: the evaluator's MCP server inside Codex's read confinement gives
the same run record and `run_command` facts as Pi's command tool, from the same script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.files import write
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import model_requests, result_dir, run_record, skill_eval_args

pytestmark = [pytest.mark.pi, pytest.mark.codex]

# A marker no other process on the machine sleeps for: the command that leaves it behind.
LEFT_BEHIND = "sleep 317"
CALLS = ("look", "fails", "hangs", "leaves-one-behind", "rm-rf")


def commands_group(root: Path) -> Group:
    write(root / "fixture" / "notes.txt", "alpha\n")
    write(root.parent / "outside" / "secret.txt", "operator secret\n")
    declared = skill(root, "note-taker")
    outside = root.parent / "outside" / "secret.txt"
    return Group(
        id="commands",
        turns=["Check the notes."],
        tools=["read", "run_command"],
        runtime=runtime(literal={"GREETING": "hi"}),
        candidate=variant([declared], 0),
        commands=[
            {
                "id": "look",
                "argv": ["sh", "-c", 'echo "$GREETING from $(pwd)"; cat notes.txt; true'],
            },
            {"id": "fails", "argv": ["sh", "-c", f"cat {outside}; echo broken >&2; exit 3"]},
            {"id": "hangs", "argv": ["sleep", "60"], "timeout_ms": 300},
            {
                "id": "leaves-one-behind",
                "argv": ["sh", "-c", f"({LEFT_BEHIND} >/dev/null 2>&1 &); echo started"],
            },
        ],
        scripts={
            "candidate": [
                *(
                    {"tool_calls": [{"name": "run_command", "arguments": {"command": c}}]}
                    for c in CALLS
                ),
                {"text": "Checked."},
            ]
        },
    )


def _facts(run: dict[str, Any]) -> list[tuple[str, Any, bool]]:
    return [
        (a["toolName"], a["args"], a["isError"])
        for turn in run["turns"]
        for a in turn["toolActivity"]
    ]


def _left_behind() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if " ".join(process.info["cmdline"] or []) == LEFT_BEHIND:
            found.append(process)
    return found


def _tool_outputs(request: dict[str, Any]) -> list[str]:
    """The text of each function-call output the request carries back to the model."""
    texts = []
    for item in request["body"]["input"]:
        if item.get("type") != "function_call_output":
            continue
        output = item.get("output")
        if isinstance(output, list):
            output = "".join(str(b.get("text", "")) for b in output if isinstance(b, dict))
        texts.append(str(output))
    return texts


def test_declared_commands_on_codex_give_pis_command_facts(pytester: pytest.Pytester) -> None:
    root = pytester.path / "root"
    suite = build(root, [commands_group(root)])
    hosts = ("--skill-eval-host", "pi", "--skill-eval-host", "codex")
    result = pytester.runpytest_subprocess(
        *skill_eval_args(root, "--skill-eval-variant", "candidate", *hosts, suite=suite)
    )
    assert result.ret == 0, result.stdout.str()

    on_pi = run_record(root, "commands", "candidate")
    on_codex = run_record(root, "commands@codex", "candidate")
    assert on_pi["state"] == on_codex["state"] == "complete", on_codex["error"]
    expected = [
        ("run_command", {"command": "look"}, False),
        ("run_command", {"command": "fails"}, False),  # a non-zero exit is an ordinary result
        ("run_command", {"command": "hangs"}, False),  # so is a timeout
        ("run_command", {"command": "leaves-one-behind"}, False),
        ("run_command", {"command": "rm-rf"}, True),  # an undeclared command is refused
    ]
    assert _facts(on_pi) == expected
    assert _facts(on_codex) == expected
    # Whatever a command left running went with the subject, on both hosts.
    assert _left_behind() == []

    variant_dir = result_dir(root) / "groups" / "commands@codex" / "candidate"
    requests = model_requests(variant_dir)
    assert len(requests) == len(CALLS) + 1
    outputs = _tool_outputs(requests[-1])
    workspace = Path(on_codex["workspace"]).resolve()
    # The declared environment, the workspace as the working directory, Pi's output shape.
    assert (
        '$ sh -c echo "$GREETING from $(pwd)"; cat notes.txt; true\nexit code: 0\n' in (outputs[0])
    )
    assert f"--- stdout ---\nhi from {workspace}\nalpha\n" in outputs[0]
    # Inside Codex's read confinement: a file outside the workspace and resources is not there.
    assert "exit code: 3" in outputs[1]
    assert "operator secret" not in outputs[1]
    assert "No such file or directory" in outputs[1]
    assert "timed out after 300 ms" in outputs[2]
    assert "rm-rf" in outputs[4]
    events = (variant_dir / "events.jsonl").read_text(encoding="utf-8")
    assert '"type":"mcp_tool_call"' in events  # what Codex itself reported
