"""A skill's own scripts run as declared commands on each registered host: `{{skill:0}}` in an
argv is the skill's snapshot, each call's exit code is in its tool activity, and `tool-call …
succeeded` means the command exited 0 (a command that exits 2 failed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.evidence import layout
from pytest_skill_eval.hosts.registration import HostRegistration
from tests.support import roots, runs
from tests.support.files import read_json, write
from tests.support.registry import host_params, run_on_host

pytestmark = pytest.mark.pi

COMMANDS = [
    {"id": "stamp", "argv": ["sh", "{{skill:0}}/scripts/stamp.sh", "from-skill"]},
    {"id": "check", "argv": ["sh", "{{skill:0}}/scripts/check.sh"]},
]


def _check(check_id: str, command: str, expect: str) -> dict[str, Any]:
    return {
        "id": check_id,
        "kind": "tool-call",
        "variant": "candidate",
        "tool": "run_command",
        "argumentContains": [f'"{command}"'],
        "expect": expect,
    }


def _scripts_root(root: Path) -> Path:
    declared = roots.skill(root, "stamper", "Run its scripts.\n")
    write(root / declared / "scripts" / "stamp.sh", 'echo "$1" > stamped.txt\n')
    write(root / declared / "scripts" / "check.sh", "echo 'not tidy' >&2\nexit 2\n")
    write(root / "fixture" / "README.md", "A project.\n")
    calls = [{"name": "run_command", "arguments": {"command": c["id"]}} for c in COMMANDS]
    group = roots.Group(
        id="skill-scripts",
        type="body",
        turns=["Stamp the project, then check it."],
        tools=["run_command"],
        fixture="fixture",
        commands=COMMANDS,
        candidate=roots.variant([declared], 0),
        expectations=[
            _check("stamp-succeeded", "stamp", "succeeded"),
            _check("check-succeeded", "check", "succeeded"),
            _check("check-failed", "check", "failed"),
            {
                "id": "stamped",
                "kind": "file-text",
                "variant": "candidate",
                "path": "stamped.txt",
                "value": "from-skill\n",
                "expect": "equals",
            },
        ],
        scripts={
            "baseline": [{"text": "Nothing to run."}],
            "candidate": [
                *({"tool_calls": [call], "stop": "tool_use"} for call in calls),
                {"text": "Stamped; the check failed."},
            ],
        },
    )
    return roots.build(root, [group])


@pytest.mark.parametrize("registration", host_params())
def test_a_skills_scripts_run_through_declared_commands_with_their_exit_codes(
    registration: HostRegistration, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    host = registration.name
    root = tmp_path / "suite"
    _scripts_root(root)
    result = run_on_host(pytester, root, host, "-v", "--skill-eval-variant", "candidate")
    assert result.ret == 0, result.stdout.str()
    group_dir = layout.group_dir(runs.result_dir(root), "skill-scripts", host)
    run = read_json(group_dir / "candidate" / "run.json")
    assert run["state"] == "complete"
    commands = [a for a in runs.activity(run) if a["toolName"] == "run_command"]
    assert [(a["isError"], a["exitCode"]) for a in commands] == [(False, 0), (False, 2)]
    grade = read_json(group_dir / "deterministic-grade.json")
    assert {c["id"]: c["state"] for c in grade["checks"]} == {
        "stamp-succeeded": "pass",
        "check-succeeded": "fail",
        "check-failed": "pass",
        "stamped": "pass",
    }
    [failed] = [c for c in grade["checks"] if c["id"] == "check-succeeded"]
    observed = failed["observed"]
    assert [call["exitCode"] for call in observed["calls"]] == [0, 2]  # every run_command call
    assert (observed["matchingCallCount"], observed["succeededCount"]) == (1, 0)
