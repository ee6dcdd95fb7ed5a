"""GitHub Copilot CLI end to end: the real pinned binary against the scripted loopback server.

One invocation (in a network namespace with only loopback, where this machine allows one)
runs three groups that together use the nine kinds of expectations, multi-turn, the path guard,
declared commands and declared context, with the operator's own Copilot configuration, skills,
instructions and keys planted around it and a workspace holding Copilot's own layers; every
test reads that one run.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.files import write
from tests.support.host_case_groups import (
    activation_case,
    body_case,
    candidate_run,
    chat_texts,
    check_states,
    commands_case,
    group_dir,
)
from tests.support.namespaces import loopback_only, loopback_only_available
from tests.support.operator import invisible_skill
from tests.support.roots import build
from tests.support.runs import model_requests, skill_eval_args

pytestmark = pytest.mark.pi

HOST = "copilot-cli"
OPERATOR_KEY = "ghp_operatorSecretToken0c0d4e5f6a7b8c9d0e1f2a3b4c5d"
OPERATOR_MARKERS = (
    "operator-copilot-skill",
    "agents-home-skill",
    "claude-home-skill",
    "OPERATOR-COPILOT-INSTRUCTIONS",
    "WORKSPACE-AGENTS-MD",
    "workspace-github-skill",
    "customize-cloud-agent",
    "github-pr-media",
    "nested-root-skill",
    "project-command-above",
)


def _operator_home(home: Path) -> None:
    """Everything Copilot CLI would read from an operator's home, each with a marker."""
    copilot = home / ".copilot"
    write(copilot / "copilot-instructions.md", "OPERATOR-COPILOT-INSTRUCTIONS\n")
    write(copilot / "settings.json", json.dumps({"model": "operator-model"}))
    for skills, name in (
        (copilot / "skills", "operator-copilot-skill"),
        (home / ".agents" / "skills", "agents-home-skill"),
        (home / ".claude" / "skills", "claude-home-skill"),
    ):
        invisible_skill(skills, name)


@pytest.fixture(scope="module")
def copilot_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, bool]:
    """The three groups run once: (definition root, output, whether only loopback existed)."""
    base = tmp_path_factory.mktemp("copilot")
    operator_home = base / "operator-home"
    _operator_home(operator_home)
    root = base / "above" / "root"
    write(root.parent / "AGENTS.md", "OPERATOR-COPILOT-INSTRUCTIONS\n")
    # A Claude Code command above the definition root: it would be listed as a skill.
    write(root.parent / ".claude" / "commands" / "project-command-above.md", "Do things.\n")
    write(root / "outside.txt", "not for the subject\n")
    # The workspace's own Copilot layers: instructions and a project skill, never loaded.
    write(root / "layers" / "AGENTS.md", "WORKSPACE-AGENTS-MD\n")
    write(root / "layers" / ".github" / "copilot-instructions.md", "WORKSPACE-AGENTS-MD\n")
    invisible_skill(root / "layers" / ".github" / "skills", "workspace-github-skill")
    # Its MCP servers and hooks, each of which would leave a file beside the root if it ran.
    for layer in (".mcp.json", ".copilot/mcp-config.json", ".github/copilot/settings.json"):
        ran = ["-c", f"touch {base / 'ran-from-workspace'}"]
        server = {"type": "local", "command": "sh", "args": ran, "tools": ["*"]}
        hook = {"type": "command", "bash": shlex.join(["sh", *ran])}
        document = {"mcpServers": {"workspace": server}, "hooks": {"sessionStart": [hook]}}
        write(root / "layers" / layer, json.dumps(document))
    body = body_case(root, HOST)
    # A project skill directory inside a root it is given with `--add-dir`: never loaded.
    invisible_skill(root / "skills" / "note-taker" / ".github" / "skills", "nested-root-skill")
    suite = build(root, [activation_case(root, HOST, "layers"), body, commands_case(root, HOST)])
    args = skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    pytest_argv = [sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(root)]
    pytest_argv += [f"--basetemp={base / 'basetemp'}", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env |= {
        "HOME": str(operator_home),
        "COPILOT_HOME": str(operator_home / ".copilot"),
        "COPILOT_MODEL": "operator-model",
        "GITHUB_TOKEN": OPERATOR_KEY,
        "GH_TOKEN": OPERATOR_KEY,
    }
    netns = loopback_only_available()
    command = loopback_only(pytest_argv) if netns else pytest_argv
    done = subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return root, output, netns


def test_multi_turn_activation_through_its_skill_tool_and_the_path_guard(
    copilot_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = copilot_run
    run = candidate_run(root, "activation", HOST)
    assert run["state"] == "complete", run["error"]
    assert run["process"]["host"] == HOST
    assert run["binary"]["version"] == "1.0.102"
    assert run["activation"]["readTurns"] == [2]
    assert run["resources"]["targetPath"] in run["activation"]["successfulReadPaths"]
    first, second = run["turns"]
    assert first["response"] == "Hi."
    assert [(a["toolName"], a["isError"]) for a in second["toolActivity"]] == [
        ("skill", False),
        ("read", True),  # outside the workspace and declared resources: refused
    ]
    assert run["response"] == "- Handle semicolons in CSV export"
    assert check_states(root, "activation", HOST) == {"reads-skill": "pass"}
    # Turn two resumed turn one's session: its first request carries turn one.
    requests = model_requests(group_dir(root, "activation", HOST) / "candidate")
    assert "Hello there." in chat_texts(requests[1])
    assert "--resume" not in run["process"]["args"]  # turn one's command line
    # Each turn's usage is its own share of the session's running totals.
    assert [t["usage"]["input"] > 0 for t in run["turns"]] == [True, True]
    assert run["usage"]["input"] == sum(t["usage"]["input"] for t in run["turns"])


def test_only_the_declared_skill_and_tools_reach_the_model(
    copilot_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = copilot_run
    requests = model_requests(group_dir(root, "activation", HOST) / "candidate")
    assert len(requests) == 4  # one request per scripted answer
    system = requests[0]["body"]["messages"][0]["content"]
    assert "<name>changelog-keeper</name>" in system
    assert system.count("<name>") == 1  # no builtin, personal or workspace skill
    tools = {t["function"]["name"] for t in requests[0]["body"]["tools"]}
    assert tools == {"view", "skill"}  # no shell, no web, no undeclared file tool


def test_the_operators_home_workspace_layers_and_keys_never_reach_the_subject(
    copilot_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = copilot_run
    for group in ("activation", "body", "commands"):
        for request in model_requests(group_dir(root, group, HOST) / "candidate"):
            sent = chat_texts(request)
            for marker in OPERATOR_MARKERS:
                assert marker not in sent, (group, marker)
            assert "operator-model" not in json.dumps(request["body"].get("model"))
    for path in (root / ".skill-eval").rglob("*"):
        if path.is_file():
            assert OPERATOR_KEY.encode() not in path.read_bytes(), path
    # The workspace's MCP servers and hooks never ran: the workspace is not trusted.
    assert not (root.parent.parent / "ran-from-workspace").exists()
    # Nothing of Copilot CLI's was added to the workspace.
    workspace = Path(candidate_run(root, "body", HOST)["workspace"])
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt", "result.json"]


def test_every_kind_grades_on_copilot_cli_and_context_reaches_the_model(
    copilot_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = copilot_run
    assert set(check_states(root, "body", HOST).values()) == {"pass"}, check_states(
        root, "body", HOST
    )
    run = candidate_run(root, "body", HOST)
    assert run["delivery"]["kind"] == "unavailable"
    activity = [(a["toolName"], a["isError"]) for a in run["turns"][0]["toolActivity"]]
    assert activity == [("read", False), ("read", False), ("edit", False), ("write", False)]


def test_declared_commands_run_through_the_evaluators_tool_never_a_shell(
    copilot_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = copilot_run
    assert check_states(root, "commands", HOST) == {"ran": "pass", "ran-file": "pass"}
    requests = model_requests(group_dir(root, "commands", HOST) / "candidate")
    tools = {t["function"]["name"] for t in requests[0]["body"]["tools"]}
    assert tools == {"view", "skill", "skill-eval-run_command"}


def test_only_loopback_traffic(copilot_run: tuple[Path, str, bool]) -> None:
    root, output, netns = copilot_run
    if not netns:
        pytest.skip("needs `unshare -rn` for a namespace with only loopback")
    # In a namespace with nothing but loopback every run completed: Copilot CLI, offline,
    # needed nothing else.
    for group in ("activation", "body", "commands"):
        run = candidate_run(root, group, HOST)
        assert run["state"] == "complete", (group, run["error"])
    assert "Traceback" not in output


def test_a_command_above_the_workspace_named_as_a_declared_skill_stops_the_subject(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "root"
    suite = build(root, [body_case(root, HOST)])
    write(root / ".claude" / "commands" / "note-taker.md", "Take notes my way.\n")
    result = pytester.runpytest_subprocess(
        *skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    )
    run = candidate_run(root, "body", HOST)
    assert run["state"] == "infrastructure-failed", result.stdout.str()
    assert (
        f"Copilot CLI would list the command {root / '.claude' / 'commands' / 'note-taker.md'} "
        "as a skill named note-taker, the name of a declared skill"
    ) in run["error"]["message"]
