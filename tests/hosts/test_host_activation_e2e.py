"""Activation by turn, the path guard and isolation from the operator, end to end, on each host
that runs it alone: one case, a table of what differs by host.

Two turns (a greeting, then the skill and a read outside the workspace) run where only loopback
exists (where this machine allows a network namespace), with the operator's own skills,
instructions files and key planted around the run. Gemini CLI and opencode run the same case
inside the one run their modules share (`test_gemini_cli_e2e.py`, `test_opencode_e2e.py`), Pi
in `test_subject_e2e.py`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.registry import registration_for
from tests.support.files import write
from tests.support.hosts import host_params
from tests.support.namespaces import loopback_only, loopback_only_available
from tests.support.operator import assert_in_no_file, invisible_skill
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import check_states, model_requests, result_dir, run_record, skill_eval_args

pytestmark = pytest.mark.pi

CANARY = "OPERATOR-INSTRUCTIONS-CANARY-9b2e"
FINAL = "- Handle semicolons in CSV export"

Checks = Callable[[dict[str, Any], list[dict[str, Any]]], None]


def _claude_code(run: dict[str, Any], requests: list[dict[str, Any]]) -> None:
    assert "Base directory for this skill" in json.dumps(requests[2]["body"])  # the skill's body
    assert "path escapes the evaluation environment" in json.dumps(requests[3]["body"])


def _codex(run: dict[str, Any], requests: list[dict[str, Any]]) -> None:
    assert run["binary"]["enforced"]["sandbox"] == "read-only"
    assert "mount namespace" in run["binary"]["enforced"]["reads"]
    # Both turns ran the native binary itself (inside the mount namespace), never Node's
    # launcher, with what the launcher would have given it.
    args = run["process"]["args"]
    assert args[args.index("--") + 1].endswith("/x86_64-unknown-linux-musl/bin/codex")
    names = set(run["environment"]["names"])
    assert {"CODEX_MANAGED_PACKAGE_ROOT", "CODEX_MANAGED_BY_NPM"} <= names
    assert requests[0]["body"]["model"] == "gpt-5.5"


@dataclass(frozen=True)
class Host:
    """What the case plants and expects on one host."""

    key: str  # the variable the operator's provider key would be in
    skills: tuple[str, ...]  # the operator's skills folders, below their home
    instructions: tuple[str, ...]  # instructions files the host would read, below the home
    beside: str  # the instructions file the host would read in a project
    tools: tuple[str, str]  # what the skill call and the read outside show as
    environment: Mapping[str, str] = field(default_factory=dict)  # below the home
    home: Mapping[str, str] = field(default_factory=dict)  # more files of the operator's
    exact_reads: bool = True  # the target is the one file the subject read
    checks: Checks = lambda run, requests: None


HOSTS = {
    "claude-code": Host(
        key="ANTHROPIC_API_KEY",
        skills=(".claude/skills",),
        instructions=("CLAUDE.md", ".claude/CLAUDE.md"),
        beside="CLAUDE.md",
        tools=("skill", "read"),
        checks=_claude_code,
    ),
    "codex": Host(
        key="OPENAI_API_KEY",
        skills=(".codex/skills", ".agents/skills"),
        instructions=(".codex/AGENTS.md",),
        beside="AGENTS.md",
        tools=("exec_command", "exec_command"),
        environment={"CODEX_HOME": ".codex"},
        home={".codex/config.toml": 'model = "operator-model"\n'},
        exact_reads=False,
        checks=_codex,
    ),
}


def _group(root: Path, host: str) -> Group:
    declared = skill(root, "changelog-keeper")
    by_turn = {"kind": "skill-read", "variant": "candidate", "expect": "by-turn"}
    outside = {"name": "read", "arguments": {"path": str(root / "outside.txt")}}
    return Group(
        id="activation",
        type="description",
        turns=["Hello there.", "Log that CSV export handles semicolons."],
        tools=["read"],
        runtime=runtime(host=host),
        candidate=variant([declared], 0),
        expectations=[
            {"id": "reads-on-two", **by_turn, "turn": 2},
            {"id": "not-on-one", **by_turn, "turn": 1},
        ],
        scripts={
            "candidate": [
                {"text": "Hi."},
                {"tool_calls": [{"name": "skill", "arguments": {"name": "changelog-keeper"}}]},
                {"tool_calls": [outside]},
                {"text": FINAL},
            ]
        },
    )


def _operator(home: Path, host: Host, monkeypatch: pytest.MonkeyPatch) -> str:
    """The operator's home, environment and key around the run; returns the key."""
    for folder in host.skills:
        invisible_skill(home / folder, f"operator-{Path(folder).parts[0].strip('.')}-skill")
    for name in host.instructions:
        write(home / name, f"{CANARY} in the operator's {name}\n")
    for name, text in host.home.items():
        write(home / name, text)
    monkeypatch.setenv("HOME", str(home))
    for name, below in host.environment.items():
        monkeypatch.setenv(name, str(home / below))
    key = f"operator-secret-{host.key.lower()}-0000"
    monkeypatch.setenv(host.key, key)
    return key


@pytest.mark.parametrize("name", host_params(HOSTS))
def test_activation_by_turn_the_guard_and_nothing_of_the_operators(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    host = HOSTS[name]
    key = _operator(pytester.path / "operator-home", host, monkeypatch)
    root = pytester.path / "root"
    write(pytester.path / host.beside, f"{CANARY} above the root\n")
    write(root / host.beside, f"{CANARY} in the definition root\n")
    write(root / "outside.txt", "not for the subject\n")
    suite = build(root, [_group(root, name)])
    args = skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    if loopback_only_available():
        # Only loopback exists in this namespace: any other connection attempt fails.
        result = pytester.run(*loopback_only([sys.executable, "-m", "pytest", *args]), timeout=300)
    else:
        result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()

    group = f"activation@{name}"
    run = run_record(root, group, "candidate")
    assert run["state"] == "complete", run["error"]
    assert run["process"]["host"] == name
    assert run["binary"]["version"] == registration_for(name).version
    target = run["resources"]["targetPath"]
    assert run["activation"]["targetRead"] is True
    assert run["activation"]["readTurns"] == [2]
    assert target in run["activation"]["successfulReadPaths"]
    if host.exact_reads:
        assert run["activation"]["successfulReadPaths"] == [target]
    first, second = run["turns"]
    assert first["response"] == "Hi."
    assert [a["toolName"] for a in second["toolActivity"]] == list(host.tools)
    assert second["toolActivity"][0]["isError"] is False
    # The guard refused the read outside the workspace and declared resources.
    assert second["toolActivity"][1]["isError"] is True
    assert str(root / "outside.txt") not in run["successfulReadPaths"]
    assert run["response"] == FINAL
    assert check_states(result_dir(root) / "groups" / group) == {
        "reads-on-two": "pass",
        "not-on-one": "fail",
    }

    requests = model_requests(result_dir(root) / "groups" / group / "candidate")
    assert len(requests) == 4
    assert "- changelog-keeper:" in json.dumps(requests[0]["body"])
    for request in requests:
        sent = json.dumps(request["body"])
        assert "operator-" not in sent  # no skill of the operator's, no model of theirs
        assert CANARY not in sent  # nor any instructions file of theirs or above the root
    assert "Hello there." in json.dumps(requests[1]["body"])  # turn two carries turn one
    host.checks(run, requests)
    # The operator's key was never handed over, so it cannot be in any evidence.
    assert_in_no_file(result_dir(root), key)
