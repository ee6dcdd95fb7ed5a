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
from typing import Any

import pytest

from tests.hosts.test_opencode_e2e import _texts
from tests.support.files import read_json, write
from tests.support.namespaces import loopback_only_available
from tests.support.roots import Group, build, runtime, skill, variant
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
)


def _skill_md(name: str) -> str:
    """A skill `name` planted where a subject must never see it."""
    return f"---\nname: {name}\ndescription: Must stay invisible.\n---\nx\n"


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
        write(skills / name / "SKILL.md", _skill_md(name))


def _activation(root: Path) -> Group:
    """Two turns: a greeting, then the skill by Copilot CLI's own tool and a read outside."""
    outside = root / "outside.txt"
    return Group(
        id="activation",
        type="description",
        turns=["Hello there.", "Log that CSV export handles semicolons."],
        tools=["read"],
        fixture="layers",
        runtime=runtime(host=HOST),
        candidate=variant([skill(root, "changelog-keeper")], 0),
        expectations=[
            {"id": "reads-skill", "kind": "skill-read", "variant": "candidate",
             "expect": "by-turn", "turn": 2},
        ],
        scripts={
            "candidate": [
                {"text": "Hi."},
                {"tool_calls": [{"name": "skill", "arguments": {"name": "changelog-keeper"}}]},
                {"tool_calls": [{"name": "read", "arguments": {"path": str(outside)}}]},
                {"text": "- Handle semicolons in CSV export"},
            ]
        },
    )  # fmt: skip


def _body(root: Path) -> Group:
    """A body group: a skill resource read, an edit, a write, declared context."""
    declared = skill(root, "note-taker")
    write(root / declared / "references" / "guide.md", "Write result.json.\n")
    # A project skill directory inside a root it is given with `--add-dir`: never loaded.
    nested = root / declared / ".github" / "skills" / "nested-root-skill"
    write(nested / "SKILL.md", _skill_md("nested-root-skill"))
    write(root / "fixture" / "notes.txt", "alpha\nbeta\n")
    write(root / "context" / "style.md", "Always write CONTEXT-MARKER-7 in replies.\n")
    expect: list[dict[str, Any]] = [
        {"id": "read-guide", "kind": "resource-read", "resource": "skill", "index": 0,
         "path": "references/guide.md", "expect": "read"},
        {"id": "wrote", "kind": "path", "path": "result.json", "expect": "exists"},
        {"id": "status", "kind": "json", "path": "result.json", "expect": "field-equals",
         "pointer": "/status", "value": "complete"},
        {"id": "changed", "kind": "changed-paths", "expect": "equals",
         "paths": ["notes.txt", "result.json"]},
        {"id": "edited", "kind": "file-text", "path": "notes.txt", "expect": "equals",
         "value": "alpha\ngamma\n"},
        {"id": "reply", "kind": "response-text", "expect": "equals", "value": "Tidied."},
        {"id": "edit-tool", "kind": "tool-call", "tool": "edit", "expect": "succeeded",
         "argumentContains": ["notes.txt"]},
        {"id": "context-seen", "kind": "context-text", "value": "CONTEXT-MARKER-7",
         "expect": "contains"},
    ]  # fmt: skip
    calls = [
        ("read", {"path": "{{skill:0}}/references/guide.md"}),
        ("read", {"path": "notes.txt"}),
        ("edit", {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}),
        ("write", {"path": "result.json", "content": '{"status": "complete"}'}),
    ]
    return Group(
        id="body",
        type="body",
        turns=["Tidy the notes."],
        tools=["read", "write", "edit"],
        fixture="fixture",
        runtime=runtime(host=HOST),
        candidate=variant([declared], 0, context=["context/style.md"]),
        expectations=[{**e, "variant": "candidate"} for e in expect],
        scripts={
            "candidate": [
                *({"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls),
                {"text": "Tidied."},
            ]
        },
    )


def _commands(root: Path) -> Group:
    """Declared commands: the evaluator's tool runs one; Copilot CLI's shell is never offered."""
    return Group(
        id="commands",
        type="body",
        turns=["Say hello."],
        tools=["read", "run_command"],
        fixture="fixture",
        runtime=runtime(host=HOST),
        candidate=variant([skill(root, "note-taker")], 0),
        commands=[{"id": "hello", "argv": ["sh", "-c", "echo COMMAND-RAN-31 > ran.txt"]}],
        expectations=[
            {"id": "ran", "kind": "tool-call", "variant": "candidate", "tool": "run_command",
             "expect": "succeeded"},
            {"id": "ran-file", "kind": "path", "variant": "candidate", "path": "ran.txt",
             "expect": "exists"},
        ],
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "hello"}}]},
                {"text": "Said."},
            ]
        },
    )  # fmt: skip


@pytest.fixture(scope="module")
def copilot_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, bool]:
    """The three groups run once: (definition root, output, whether only loopback existed)."""
    base = tmp_path_factory.mktemp("copilot")
    operator_home = base / "operator-home"
    _operator_home(operator_home)
    root = base / "above" / "root"
    write(root.parent / "AGENTS.md", "OPERATOR-COPILOT-INSTRUCTIONS\n")
    write(root / "outside.txt", "not for the subject\n")
    # The workspace's own Copilot layers: instructions and a project skill, never loaded.
    write(root / "layers" / "AGENTS.md", "WORKSPACE-AGENTS-MD\n")
    write(root / "layers" / ".github" / "copilot-instructions.md", "WORKSPACE-AGENTS-MD\n")
    skill_dir = root / "layers" / ".github" / "skills" / "workspace-github-skill"
    write(skill_dir / "SKILL.md", _skill_md("workspace-github-skill"))
    # Its MCP servers and hooks, each of which would leave a file beside the root if it ran.
    for layer in (".mcp.json", ".copilot/mcp-config.json", ".github/copilot/settings.json"):
        ran = ["-c", f"touch {base / 'ran-from-workspace'}"]
        server = {"type": "local", "command": "sh", "args": ran, "tools": ["*"]}
        hook = {"type": "command", "bash": shlex.join(["sh", *ran])}
        document = {"mcpServers": {"workspace": server}, "hooks": {"sessionStart": [hook]}}
        write(root / "layers" / layer, json.dumps(document))
    suite = build(root, [_activation(root), _body(root), _commands(root)])
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
    command = pytest_argv
    if netns:
        # Only loopback exists in this namespace: any other connection attempt fails.
        inner = f"ip link set lo up && exec {shlex.join(pytest_argv)}"
        command = ["unshare", "-rn", "sh", "-c", inner]
    done = subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return root, output, netns


def _group_dir(root: Path, group: str) -> Path:
    (result,) = (root / ".skill-eval" / "runs").iterdir()
    return result / "groups" / f"{group}@{HOST}"


def _run(root: Path, group: str) -> dict[str, Any]:
    run: dict[str, Any] = read_json(_group_dir(root, group) / "candidate" / "run.json")
    return run


def _checks(root: Path, group: str) -> dict[str, str]:
    grade = read_json(_group_dir(root, group) / "deterministic-grade.json")
    return {c["id"]: c["state"] for c in grade["checks"]}


def test_multi_turn_activation_through_its_skill_tool_and_the_path_guard(
    copilot_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = copilot_run
    run = _run(root, "activation")
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
    assert _checks(root, "activation") == {"reads-skill": "pass"}
    # Turn two resumed turn one's session: its first request carries turn one.
    requests = model_requests(_group_dir(root, "activation") / "candidate")
    assert "Hello there." in _texts(requests[1])
    assert "--resume" not in run["process"]["args"]  # turn one's command line
    # Each turn's usage is its own share of the session's running totals.
    assert [t["usage"]["input"] > 0 for t in run["turns"]] == [True, True]
    assert run["usage"]["input"] == sum(t["usage"]["input"] for t in run["turns"])


def test_only_the_declared_skill_and_tools_reach_the_model(
    copilot_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = copilot_run
    requests = model_requests(_group_dir(root, "activation") / "candidate")
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
        for request in model_requests(_group_dir(root, group) / "candidate"):
            sent = _texts(request)
            for marker in OPERATOR_MARKERS:
                assert marker not in sent, (group, marker)
            assert "operator-model" not in json.dumps(request["body"].get("model"))
    for path in (root / ".skill-eval").rglob("*"):
        if path.is_file():
            assert OPERATOR_KEY.encode() not in path.read_bytes(), path
    # The workspace's MCP servers and hooks never ran: the workspace is not trusted.
    assert not (root.parent.parent / "ran-from-workspace").exists()
    # Nothing of Copilot CLI's was added to the workspace.
    workspace = Path(_run(root, "body")["workspace"])
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt", "result.json"]


def test_every_kind_grades_on_copilot_cli_and_context_reaches_the_model(
    copilot_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = copilot_run
    assert set(_checks(root, "body").values()) == {"pass"}, _checks(root, "body")
    run = _run(root, "body")
    assert run["delivery"]["kind"] == "unavailable"
    activity = [(a["toolName"], a["isError"]) for a in run["turns"][0]["toolActivity"]]
    assert activity == [("read", False), ("read", False), ("edit", False), ("write", False)]


def test_declared_commands_run_through_the_evaluators_tool_never_a_shell(
    copilot_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = copilot_run
    assert _checks(root, "commands") == {"ran": "pass", "ran-file": "pass"}
    requests = model_requests(_group_dir(root, "commands") / "candidate")
    tools = {t["function"]["name"] for t in requests[0]["body"]["tools"]}
    assert tools == {"view", "skill", "skill-eval-run_command"}


def test_only_loopback_traffic(copilot_run: tuple[Path, str, bool]) -> None:
    root, output, netns = copilot_run
    if not netns:
        pytest.skip("needs `unshare -rn` for a namespace with only loopback")
    # In a namespace with nothing but loopback every run completed: Copilot CLI, offline,
    # needed nothing else.
    for group in ("activation", "body", "commands"):
        run = _run(root, group)
        assert run["state"] == "complete", (group, run["error"])
    assert "Traceback" not in output
