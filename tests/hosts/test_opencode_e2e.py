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
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from pytest_skill_eval.modelserver.server import QuietHandler
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
from tests.support.operator import assert_in_no_file, invisible_skill
from tests.support.roots import build
from tests.support.runs import model_requests, skill_eval_args

pytestmark = pytest.mark.pi

HOST = "opencode"
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
    suite = build(root, [case(root, HOST) for case in (activation_case, body_case, commands_case)])
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


def test_multi_turn_activation_through_opencodes_skill_tool(
    opencode_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = opencode_run
    run = candidate_run(root, "activation", HOST)
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
    assert check_states(root, "activation", HOST) == {"reads-skill": "pass"}
    # Turn two continued turn one's session: its first request carries turn one.
    requests = model_requests(group_dir(root, "activation", HOST) / "candidate")
    assert "Hello there." in chat_texts(requests[1])
    assert run["process"]["args"].count("--session") == 0  # turn one's command line
    # Both prompts reached the model as written: from argv, opencode quoted one with a space.
    users = [m["content"] for m in requests[-1]["body"]["messages"] if m["role"] == "user"]
    assert users == ["Hello there.", "Log that CSV export handles semicolons."]
    assert "Hello there." not in run["process"]["args"]  # on stdin, never in argv


def test_no_title_request_and_only_the_declared_skill_and_tools(
    opencode_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = opencode_run
    requests = model_requests(group_dir(root, "activation", HOST) / "candidate")
    # Four scripted answers, four requests: opencode never asked the model for a title.
    assert len(requests) == 4
    assert not any("title generator" in chat_texts(r) for r in requests)
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
        for request in model_requests(group_dir(root, group, HOST) / "candidate"):
            sent = chat_texts(request)
            for marker in OPERATOR_MARKERS:
                assert marker not in sent, (group, marker)
    assert_in_no_file(root / ".skill-eval", OPERATOR_KEY)
    # Nothing of opencode's was added to the workspace.
    workspace = Path(candidate_run(root, "body", HOST)["workspace"])
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt", "result.json"]


def test_every_kind_grades_on_opencode_and_context_reaches_the_model(
    opencode_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = opencode_run
    assert set(check_states(root, "body", HOST).values()) == {"pass"}, check_states(
        root, "body", HOST
    )
    run = candidate_run(root, "body", HOST)
    assert run["delivery"]["kind"] == "unavailable"
    activity = [(a["toolName"], a["isError"]) for a in run["turns"][0]["toolActivity"]]
    assert activity == [("read", False), ("read", False), ("edit", False), ("write", False)]


def test_declared_commands_run_through_the_evaluators_tool_never_a_shell(
    opencode_run: tuple[Path, str, bool],
) -> None:
    root, _, _ = opencode_run
    assert check_states(root, "commands", HOST) == {"ran": "pass", "ran-file": "pass"}
    requests = model_requests(group_dir(root, "commands", HOST) / "candidate")
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
        run = candidate_run(root, group, HOST)
        assert run["state"] == "complete", (group, run["error"])
    assert "Traceback" not in output


class _Registry:
    """A package registry on loopback that answers nothing and keeps every request's path."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        registry = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                registry.paths.append(self.path)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

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
            command = host.command(binary, launch, home)
            env = command.env | {"npm_config_registry": registry.url}
            subprocess.run(
                command.argv, cwd=workspace, env=env, input=launch.prompts[0].encode(),
                capture_output=True, timeout=300,
            )  # fmt: skip
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
