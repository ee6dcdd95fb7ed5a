"""The real Codex CLI against the scripted server: one neutral script, rendered onto its tools."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.dialect import renderer
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.support.paths import REPO

pytestmark = [pytest.mark.pi, pytest.mark.codex]

CODEX = REPO / "node_modules" / ".bin" / "codex"
RESPONSES = "openai-responses"

# The hardened configuration of the host recipe, with retries off so each answer is used once.
CONFIG = """\
model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.fake]
name = "Scripted loopback"
base_url = "{base_url}"
wire_api = "responses"
env_key = "SCRIPTED_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[otel]
exporter = "none"

[features]
plugins = false
apps = false
remote_plugin = false
plugin_sharing = false
hooks = false
image_generation = false
goals = false
tool_suggest = false
in_app_updates = false
skill_mcp_dependency_install = false

[skills.bundled]
enabled = false

[agents]
enabled = false
"""

SCRIPT = {
    "version": 1,
    "interactions": [
        {
            "response": {
                "thinking": "The greet skill applies.",
                "tool_calls": [{"name": "skill", "arguments": {"name": "greet"}}],
            }
        },
        {
            "response": {
                "tool_calls": [{"name": "read", "arguments": {"path": "{{workspace}}/note.txt"}}]
            }
        },
        {
            "response": {
                "tool_calls": [
                    {
                        "name": "write",
                        "arguments": {
                            "path": "{{workspace}}/new.txt",
                            "content": "made\nby patch\n",
                        },
                    }
                ]
            }
        },
        {
            "response": {
                "tool_calls": [
                    {
                        "name": "edit",
                        "arguments": {
                            "path": "{{workspace}}/edit.txt",
                            "edits": [{"oldText": "apples", "newText": "pears"}],
                        },
                    }
                ]
            }
        },
        {"response": {"text": "Ahoy, all done."}},
    ],
}


def test_a_neutral_script_reads_writes_and_edits_through_codex(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    if not CODEX.exists():
        pytest.skip(f"Codex is not installed at {CODEX}; run `npm ci` in the project root")
    workspace, home, temp, skill = (tmp_path / n for n in ("ws", "home", "tmp", "snap/greet"))
    for directory in (workspace, home / ".codex", temp, skill):
        directory.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "note.txt").write_text("hello secret 4242\n", encoding="utf-8")
    (workspace / "edit.txt").write_text("one\ntwo apples\nthree\n", encoding="utf-8")
    (skill / "SKILL.md").write_text("---\nname: greet\n---\nSay ahoy.\n", encoding="utf-8")
    places = {"workspace": str(workspace), "skill:0": str(skill)}
    route = model_server.open_route(
        parse_script(SCRIPT), placeholders=places, workspace=workspace, render=renderer("codex")
    )
    config = CONFIG.format(base_url=route.base_url(RESPONSES))
    (home / ".codex" / "config.toml").write_text(config, encoding="utf-8")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "TMPDIR": str(temp),
        "SCRIPTED_KEY": "scripted",
    }
    try:
        done = subprocess.run(
            [str(CODEX), "exec", "--json", "-s", "workspace-write", "do it"],
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    finally:
        route.close()
    assert done.returncode == 0, done.stderr
    assert route.failures == []
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    items: list[dict[str, Any]] = [e["item"] for e in events if e["type"] == "item.completed"]
    assert items[0] == {
        "id": items[0]["id"],
        "type": "reasoning",
        "text": "The greet skill applies.",
    }
    commands = [i for i in items if i["type"] == "command_execution"]
    assert [c["exit_code"] for c in commands] == [0, 0]
    assert f"cat '{skill}/SKILL.md'" in commands[0]["command"]
    assert commands[0]["aggregated_output"] == "---\nname: greet\n---\nSay ahoy.\n"
    assert commands[1]["aggregated_output"] == "hello secret 4242\n"
    changes = [i["changes"] for i in items if i["type"] == "file_change"]
    assert changes == [
        [{"path": str(workspace / "new.txt"), "kind": "add"}],
        [{"path": str(workspace / "edit.txt"), "kind": "update"}],
    ]
    assert items[-1]["type"] == "agent_message"
    assert items[-1]["text"] == "Ahoy, all done."
    assert (workspace / "new.txt").read_text(encoding="utf-8") == "made\nby patch\n"
    assert (workspace / "edit.txt").read_text(encoding="utf-8") == "one\ntwo pears\nthree\n"
    # Codex sent each answer back as the next request's input: the custom call and its output.
    assert len(route.requests) == 5
    last = route.requests[-1].body["input"]
    kinds = [item["type"] for item in last if item["type"] != "message"]
    assert kinds == [
        "reasoning",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
    ]
