"""Declared commands on each host that runs them alone, from the same script: the evaluator's
command tool (Pi's own, or its MCP server inside Claude Code and inside Codex's read
confinement) gives the same run record and `run_command` facts everywhere, what the model is
told has Pi's shape, and whatever a command leaves running goes with the subject. What differs
by host is a row of `HOSTS`; Gemini CLI and opencode run declared commands inside the run their
modules share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.files import write
from tests.support.hosts import host_params
from tests.support.roots import Group, runtime, skill, variant
from tests.support.runs import model_requests, result_dir, run_candidate, run_record, tool_results

pytestmark = pytest.mark.pi

# A marker no other process on the machine sleeps for: the command that leaves it behind.
LEFT_BEHIND = "sleep 317"
CALLS = ("look", "fails", "hangs", "leaves-one-behind", "rm-rf")
LOOK = 'echo "$GREETING from $(pwd)"; cat notes.txt; env | grep -c ^SKILL_EVAL_; true'
# What the model was told of each call, and whether the host marked it an error (None: the wire
# format has no such mark).
Told = list[tuple[str, bool | None]]


def _chat(request: dict[str, Any]) -> Told:
    return [(text, None) for text in tool_results(request)]


def _anthropic(request: dict[str, Any]) -> Told:
    told: Told = []
    for message in request["body"]["messages"]:
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                parts = [inner] if isinstance(inner, str) else inner or []
                text = "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in parts)
                told.append((text, block.get("is_error") is True))
    return told


def _responses(request: dict[str, Any]) -> Told:
    told: Told = []
    for item in request["body"]["input"]:
        if item.get("type") != "function_call_output":
            continue
        output = item.get("output")
        if isinstance(output, list):
            output = "".join(str(b.get("text", "")) for b in output if isinstance(b, dict))
        told.append((str(output), None))
    return told


def _claude_code(variant_dir: Path, requests: list[dict[str, Any]], told: Told) -> None:
    offered = {t["name"] for t in requests[0]["body"]["tools"]}
    assert "mcp__skill-eval__run_command" in offered
    assert not offered & {"Bash", "WebFetch"}
    assert told[4][1] is True  # the refusal is an error on the wire too


def _codex(variant_dir: Path, requests: list[dict[str, Any]], told: Told) -> None:
    # Inside Codex's read confinement: a file outside the workspace and resources is not there.
    assert "operator secret" not in told[1][0]
    assert "No such file or directory" in told[1][0]
    events = (variant_dir / "events.jsonl").read_text(encoding="utf-8")
    assert '"type":"mcpToolCall"' in events  # what Codex itself reported


@dataclass(frozen=True)
class Host:
    """How one host tells the model what a command did, and what only it shows."""

    told: Callable[[dict[str, Any]], Told]  # reads the last request
    exact: bool  # each result is exactly the evaluator's text, nothing around it
    checks: Callable[[Path, list[dict[str, Any]], Told], None] = lambda d, r, t: None


HOSTS = {
    "pi": Host(_chat, exact=True),
    "claude-code": Host(_anthropic, exact=True, checks=_claude_code),
    "codex": Host(_responses, exact=False, checks=_codex),
}


def _group(root: Path, host: str) -> Group:
    write(root / "fixture" / "notes.txt", "alpha\n")
    outside = root.parent / "outside" / "secret.txt"
    write(outside, "operator secret\n")
    return Group(
        id="commands",
        turns=["Check the notes."],
        tools=["read", "run_command"],
        runtime=runtime(literal={"GREETING": "hi"}, host=host),
        candidate=variant([skill(root, "note-taker")], 0),
        commands=[
            {"id": "look", "argv": ["sh", "-c", LOOK]},
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


def _left_behind() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if " ".join(process.info["cmdline"] or []) == LEFT_BEHIND:
            found.append(process)
    return found


@pytest.mark.parametrize("name", host_params(HOSTS))
def test_declared_commands_give_pis_command_facts(pytester: pytest.Pytester, name: str) -> None:
    host = HOSTS[name]
    root = pytester.path / "root"
    result = run_candidate(pytester, root, [_group(root, name)])
    assert result.ret == 0, result.stdout.str()

    group = "commands" if name == "pi" else f"commands@{name}"
    run = run_record(root, group, "candidate")
    assert run["state"] == "complete", run["error"]
    assert [
        (a["toolName"], a["args"], a["isError"]) for t in run["turns"] for a in t["toolActivity"]
    ] == [
        ("run_command", {"command": "look"}, False),
        ("run_command", {"command": "fails"}, False),  # a non-zero exit is an ordinary result
        ("run_command", {"command": "hangs"}, False),  # so is a timeout
        ("run_command", {"command": "leaves-one-behind"}, False),
        ("run_command", {"command": "rm-rf"}, True),  # an undeclared command is refused
    ]
    # Whatever a command left running went with the subject.
    assert _left_behind() == []

    variant_dir = result_dir(root) / "groups" / group / "candidate"
    requests = model_requests(variant_dir)
    assert len(requests) == len(CALLS) + 1
    told = host.told(requests[-1])
    workspace = Path(run["workspace"]).resolve()
    # The declared environment, the workspace as the working directory, and not one of the
    # evaluator's own variables: Pi's output shape.
    look = "\n".join(
        [f"$ sh -c {LOOK}", "exit code: 0", "--- stdout ---", f"hi from {workspace}", "alpha", "0"]
    )
    if host.exact:
        assert told[0][0] == f"{look}\n\n--- stderr ---\n"
        fails = f"$ sh -c cat {root.parent / 'outside' / 'secret.txt'}; echo broken >&2; exit 3"
        assert told[1][0].splitlines()[:2] == [fails, "exit code: 3"]
        assert told[2][0].splitlines()[1] == "timed out after 300 ms"
    assert look in told[0][0]
    assert "exit code: 3" in told[1][0]
    assert "timed out after 300 ms" in told[2][0]
    assert "rm-rf" in told[4][0]
    host.checks(variant_dir, requests, told)
