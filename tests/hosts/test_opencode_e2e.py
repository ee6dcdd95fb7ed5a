"""opencode end to end: the real pinned binary against the scripted loopback server.

One invocation (in a network namespace with only loopback, where this machine allows one)
runs three groups that together use the nine kinds of expectations, multi-turn, the path guard,
declared commands and declared context, with the operator's own opencode configuration,
skills, instructions and keys planted around it; every test reads that one run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import read_json, write
from tests.support.namespaces import loopback_only, loopback_only_available
from tests.support.operator import assert_in_no_file, invisible_skill
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import model_requests, skill_eval_args

pytestmark = pytest.mark.pi

OPERATOR_KEY = "sk-proj-operator-secret-0c0d"
OPERATOR_MARKERS = (
    "operator-config-skill",
    "claude-home-skill",
    "agents-home-skill",
    "OPERATOR-GLOBAL-AGENTS",
    "ABOVE-ROOT-AGENTS",
    "ABOVE-ROOT-CLAUDE",
    "operator-model",
)


def _operator_home(home: Path) -> None:
    """Everything opencode would read from an operator's home, each with a marker."""
    config = home / ".config" / "opencode"
    write(config / "opencode.json", json.dumps({"model": "operator/operator-model"}))
    write(config / "AGENTS.md", "OPERATOR-GLOBAL-AGENTS\n")
    for skills, name in (
        (config / "skills", "operator-config-skill"),
        (home / ".claude" / "skills", "claude-home-skill"),
        (home / ".agents" / "skills", "agents-home-skill"),
    ):
        invisible_skill(skills, name)
    write(home / ".claude" / "CLAUDE.md", "OPERATOR-GLOBAL-AGENTS\n")


def _activation(root: Path) -> Group:
    """Two turns: a greeting, then the skill by opencode's own tool and a read outside."""
    outside = root / "outside.txt"
    return Group(
        id="activation",
        type="description",
        turns=["Hello there.", "Log that CSV export handles semicolons."],
        tools=["read"],
        runtime=runtime(host="opencode"),
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
        turns=["Tidy the notes."],
        tools=["read", "write", "edit"],
        runtime=runtime(host="opencode"),
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
    """Declared commands: the evaluator's tool runs one; opencode's shell is never offered."""
    return Group(
        id="commands",
        turns=["Say hello."],
        tools=["read", "run_command"],
        runtime=runtime(host="opencode"),
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
def opencode_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, bool]:
    """The three groups run once: (definition root, output, whether only loopback existed)."""
    base = tmp_path_factory.mktemp("opencode")
    operator_home = base / "operator-home"
    _operator_home(operator_home)
    root = base / "above" / "root"
    write(root.parent / "AGENTS.md", "ABOVE-ROOT-AGENTS\n")
    write(root.parent / "CLAUDE.md", "ABOVE-ROOT-CLAUDE\n")
    write(root / "outside.txt", "not for the subject\n")
    suite = build(root, [_activation(root), _body(root), _commands(root)])
    args = skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    pytest_argv = [sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(root)]
    pytest_argv += [f"--basetemp={base / 'basetemp'}", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env |= {
        "HOME": str(operator_home),
        "XDG_CONFIG_HOME": str(operator_home / ".config"),
        "OPENCODE_CONFIG_CONTENT": json.dumps({"model": "operator/operator-model"}),
        "OPENAI_API_KEY": OPERATOR_KEY,
    }
    netns = loopback_only_available()
    command = loopback_only(pytest_argv) if netns else pytest_argv
    done = subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return root, output, netns


def _group_dir(root: Path, group: str) -> Path:
    (result,) = (root / ".skill-eval" / "runs").iterdir()
    return result / "groups" / f"{group}@opencode"


def _run(root: Path, group: str) -> dict[str, Any]:
    run: dict[str, Any] = read_json(_group_dir(root, group) / "candidate" / "run.json")
    return run


def _checks(root: Path, group: str) -> dict[str, str]:
    grade = read_json(_group_dir(root, group) / "deterministic-grade.json")
    return {c["id"]: c["state"] for c in grade["checks"]}


def _texts(request: dict[str, Any]) -> str:
    """Every text the model was sent in one chat-completions request, and its tool names."""
    body = request["body"]
    tools = [t.get("function", {}).get("name") for t in body.get("tools", [])]
    return json.dumps(body.get("messages", [])) + json.dumps(tools)


def test_multi_turn_activation_through_opencodes_skill_tool(
    opencode_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = opencode_run
    run = _run(root, "activation")
    assert run["state"] == "complete", run["error"]
    assert run["process"]["host"] == "opencode"
    assert run["binary"]["version"] == "1.18.33"
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
    # Turn two continued turn one's session: its first request carries turn one.
    requests = model_requests(_group_dir(root, "activation") / "candidate")
    assert "Hello there." in _texts(requests[1])
    assert run["process"]["args"].count("--session") == 0  # turn one's command line


def test_no_title_request_and_only_the_declared_skill_and_tools(
    opencode_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = opencode_run
    requests = model_requests(_group_dir(root, "activation") / "candidate")
    # Four scripted answers, four requests: opencode never asked the model for a title.
    assert len(requests) == 4
    assert not any("title generator" in _texts(r) for r in requests)
    body = requests[0]["body"]
    system = body["messages"][0]["content"]
    assert "<name>changelog-keeper</name>" in system
    assert system.count("<skill>") == 1  # not even opencode's built-in skill
    tools = {t["function"]["name"] for t in body["tools"]}
    assert not {"bash", "webfetch", "websearch"} & tools
    assert {"read", "skill"} <= tools
    assert not {"write", "edit"} & tools  # undeclared


def test_the_operators_home_config_instructions_and_keys_never_reach_the_subject(
    opencode_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = opencode_run
    for group in ("activation", "body", "commands"):
        for request in model_requests(_group_dir(root, group) / "candidate"):
            sent = _texts(request)
            for marker in OPERATOR_MARKERS:
                assert marker not in sent, (group, marker)
    assert_in_no_file(root / ".skill-eval", OPERATOR_KEY)
    # Nothing of opencode's was added to the workspace.
    workspace = Path(_run(root, "body")["workspace"])
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt", "result.json"]


def test_every_kind_grades_on_opencode_and_context_reaches_the_model(
    opencode_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = opencode_run
    assert set(_checks(root, "body").values()) == {"pass"}, _checks(root, "body")
    run = _run(root, "body")
    assert run["delivery"]["kind"] == "unavailable"
    activity = [(a["toolName"], a["isError"]) for a in run["turns"][0]["toolActivity"]]
    assert activity == [("read", False), ("read", False), ("edit", False), ("write", False)]


def test_declared_commands_run_through_the_evaluators_tool_never_a_shell(
    opencode_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = opencode_run
    assert _checks(root, "commands") == {"ran": "pass", "ran-file": "pass"}
    requests = model_requests(_group_dir(root, "commands") / "candidate")
    tools = {t["function"]["name"] for t in requests[0]["body"]["tools"]}
    assert "bash" not in tools
    assert "skill-eval_run_command" in tools


def test_only_loopback_traffic(opencode_run: tuple[Path, str, bool]) -> None:
    root, output, netns = opencode_run
    if not netns:
        pytest.skip("needs `unshare -rn` for a namespace with only loopback")
    # In a namespace with nothing but loopback every run completed: opencode needed nothing
    # else (that its plugin installer asks nothing is `test_opencodes_plugin_installer_…`).
    for group in ("activation", "body", "commands"):
        run = _run(root, group)
        assert run["state"] == "complete", (group, run["error"])
    assert "Traceback" not in output


class _Registry:
    """A package registry on loopback that answers nothing and keeps every request's path."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.paths.append(self.path)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"


def _registry_requests(tmp_path: Path, quiet: bool) -> list[str]:
    """What opencode asked a package registry while answering one scripted prompt, started as
    the evaluator starts it (its home, config and environment), its registry our loopback one;
    `quiet`: with the installer's config directories satisfied, as the evaluator leaves them."""
    from pytest_skill_eval.hosts import checked_binary
    from pytest_skill_eval.hosts.base import Endpoint, Launch, ServedModel
    from pytest_skill_eval.hosts.dialect import renderer
    from pytest_skill_eval.hosts.opencode.host import OpencodeHost
    from pytest_skill_eval.hosts.options import HostOptions
    from pytest_skill_eval.modelserver.scriptparse import parse_script
    from pytest_skill_eval.modelserver.server import ScriptedModelServer
    from pytest_skill_eval.modelserver.wire import OPENAI

    binary = checked_binary("opencode", HostOptions(), Path.cwd())
    registry = _Registry()
    script = parse_script({"version": 1, "interactions": [{"response": {"text": "done"}}]})
    workspace = tmp_path / f"work-{quiet}"
    workspace.mkdir()
    try:
        with ScriptedModelServer() as server:
            route = server.open_route(script, render=renderer("opencode"))
            served = ServedModel(route, OPENAI, "scripted", "scripted")
            host = OpencodeHost()
            home = host.prepare(tmp_path / f"home-{quiet}", Endpoint("scripted", None, served))
            if not quiet:
                for directory in (home.config, home.home / ".opencode"):
                    shutil.rmtree(directory / "node_modules")
            launch = Launch(workspace, ("Say done.",), True, tmp_path / "e", tmp_path / "s")
            argv = host.argv(binary, launch, home)
            env = host.environment(home) | {"npm_config_registry": registry.url}
            subprocess.run(argv, cwd=workspace, env=env, capture_output=True, timeout=300)
            route.close()
    finally:
        registry.httpd.shutdown()
    return registry.paths


def test_opencodes_plugin_installer_never_asks_a_registry(tmp_path: Path) -> None:
    (tmp_path / "quiet").mkdir()
    (tmp_path / "loud").mkdir()
    # Left as opencode expects a fresh config directory, it asks for its plugin package…
    assert any("opencode-ai" in path for path in _registry_requests(tmp_path / "loud", False))
    # …and as the evaluator leaves it, never.
    assert _registry_requests(tmp_path / "quiet", True) == []
