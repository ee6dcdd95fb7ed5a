"""opencode's pieces without starting it: its config, tool dialect, events and binary check."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.base import Endpoint, ServedModel
from pytest_skill_eval.hosts.binaries import HostNotFoundError
from pytest_skill_eval.hosts.dialect import render_for_host
from pytest_skill_eval.hosts.observation import Observation
from pytest_skill_eval.hosts.opencode.binary import (
    check_opencode,
    locate_opencode,
)
from pytest_skill_eval.hosts.opencode.config import (
    Document,
    OpencodeConfig,
    command_server_entry,
)
from pytest_skill_eval.hosts.opencode.events import EventTranslator
from pytest_skill_eval.hosts.opencode.host import OpencodeHost, install_skills, quiet_installer
from pytest_skill_eval.hosts.opencode.registration import OPENCODE
from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from pytest_skill_eval.modelserver.wire import OPENAI
from tests.support.files import write

SNAPSHOT = "/results/resources/skills/0/SKILL.md"


def _config(**changes: Any) -> Document:
    values: dict[str, Any] = {
        "base_url": "http://127.0.0.1:1/r/t/v1",
        "model": "scripted",
        "tools": ("read",),
        "skills": ("greet",),
        "allowed_roots": ("/ws", "/snap/greet"),
    }
    return OpencodeConfig(**(values | changes)).document()


def test_the_config_denies_shells_the_web_outside_paths_and_other_skills() -> None:
    document = _config()
    permission = document["permission"]
    assert permission["*"] == "deny"
    assert permission["bash"] == permission["webfetch"] == "deny"
    assert permission["external_directory"] == {
        "*": "deny",
        "/ws/*": "allow",
        "/snap/greet/*": "allow",
    }
    # Only the declared skills: opencode's built-in one is hidden from the model too.
    assert permission["skill"] == {"*": "deny", "greet": "allow"}
    assert permission["read"] == "allow"
    assert permission["edit"] == "deny"  # write and edit were not declared
    provider = document["provider"]["skill-eval"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"]["baseURL"] == "http://127.0.0.1:1/r/t/v1"
    assert document["model"] == "skill-eval/scripted"
    assert document["mcp"] == {}


def test_the_config_prices_the_model_and_offers_declared_commands() -> None:
    server = command_server_entry("python", "server.py", {}, 60_000)
    document = _config(
        tools=("write",), prices={"input": 1.5, "output": 6.0}, command_server=server
    )
    model = document["provider"]["skill-eval"]["models"]["scripted"]
    assert model["cost"] == {"input": 1.5, "output": 6.0, "cache_read": 0.0, "cache_write": 0.0}
    assert document["permission"]["edit"] == "allow"
    assert document["permission"]["read"] == "deny"
    assert document["permission"]["skill-eval_run_command"] == "allow"
    assert document["mcp"] == {"skill-eval": server}


def test_neutral_calls_are_written_in_opencodes_dialect() -> None:
    response = ScriptedResponse(
        tool_calls=(
            ToolCall("read", {"path": "notes.txt", "offset": 2}),
            ToolCall("edit", {"path": "a.md", "edits": [{"oldText": "x", "newText": "y"}] * 2}),
            ToolCall("write", {"path": "out.md", "content": "ok"}),
            ToolCall("skill", {"name": "greet"}),
            ToolCall("run_command", {"command": "hello"}),
        )
    )
    rendered = render_for_host(response, "opencode", {}, None).tool_calls
    assert [(c.name, c.arguments) for c in rendered] == [
        ("read", {"filePath": "notes.txt", "offset": 2}),
        ("edit", {"filePath": "a.md", "oldString": "x", "newString": "y"}),
        ("edit", {"filePath": "a.md", "oldString": "x", "newString": "y"}),
        ("write", {"filePath": "out.md", "content": "ok"}),
        ("skill", {"name": "greet"}),
        ("skill-eval_run_command", {"command": "hello"}),
    ]
    assert OPENCODE.render == "pytest_skill_eval.hosts.opencode.tools:render"


def _tool(call: str, tool: str, status: str, **input_: Any) -> dict[str, Any]:
    state = {"status": status, "input": input_, "output": "…"}
    part = {"type": "tool", "tool": tool, "callID": call, "state": state}
    return {"type": "tool_use", "sessionID": "ses_1", "part": part}


def test_events_become_the_neutral_observation() -> None:
    obs = Observation()
    translator = EventTranslator(obs, {"greet": SNAPSHOT, "/home/skills/greet/SKILL.md": SNAPSHOT})
    turn = obs.begin_turn(1, "Hi", "Hi")
    tokens = {"input": 10, "output": 5, "reasoning": 1, "cache": {"read": 2, "write": 0}}
    events = [
        {"type": "step_start", "sessionID": "ses_1", "part": {}},
        _tool("c1", "skill", "completed", name="greet"),
        _tool("c2", "read", "error", filePath="/etc/passwd"),
        _tool("c3", "read", "completed", filePath="/home/skills/greet/SKILL.md"),
        _tool("c4", "skill-eval_run_command", "completed", command="hello"),
        {"type": "step_finish", "part": {"reason": "tool-calls", "tokens": tokens, "cost": 0.5}},
        {"type": "text", "part": {"messageID": "m2", "text": "Ahoy"}},
        {"type": "text", "part": {"messageID": "m2", "text": ", matey"}},
        {"type": "step_finish", "part": {"reason": "stop", "tokens": tokens, "cost": 0.25}},
    ]
    for event in events:
        assert translator.apply(event) is False  # the end of the process settles a turn
    assert translator.session_id == "ses_1"
    assert [(a["toolName"], a["isError"]) for a in turn.tool_activity] == [
        ("skill", False),
        ("read", True),
        ("read", False),
        ("run_command", False),
    ]
    args = turn.tool_activity[1].get("args")
    assert isinstance(args, dict)
    assert args["path"] == "/etc/passwd"
    assert turn.reads == [SNAPSHOT, SNAPSHOT]
    assert turn.response == "Ahoy, matey"
    assert turn.usage is not None
    assert (turn.usage["input"], turn.usage["output"], turn.usage["cacheRead"]) == (20, 12, 4)
    assert turn.usage["cost"]["total"] == 0.75


def test_an_error_event_fails_the_turn_with_opencodes_message() -> None:
    obs = Observation()
    translator = EventTranslator(obs, {})
    turn = obs.begin_turn(1, "Hi", "Hi")
    error = {"name": "APIError", "data": {"message": "model refused the request"}}
    translator.apply({"type": "error", "sessionID": "ses_2", "error": error})
    assert turn.assistant_error == "opencode reported: APIError: model refused the request"


def test_skills_are_linked_into_the_config_dir_and_the_installer_is_satisfied(
    tmp_path: Path,
) -> None:
    snapshot = tmp_path / "snap" / "greet"
    write(snapshot / "SKILL.md", "---\nname: greet\ndescription: d\n---\nx\n")
    config = tmp_path / "home" / ".config" / "opencode"
    config.mkdir(parents=True)
    known = install_skills(config, [snapshot])
    assert (config / "skills" / "greet").resolve() == snapshot
    assert known["greet"] == str(snapshot / "SKILL.md")
    assert known[str(config / "skills" / "greet" / "SKILL.md")] == str(snapshot / "SKILL.md")
    quiet_installer(config)
    assert (config / "node_modules").is_dir()
    lock = (config / "package-lock.json").read_text(encoding="utf-8")
    assert '"@opencode-ai/plugin": "1.18.33"' in lock


def test_a_served_run_reads_an_empty_models_database_of_its_own_and_a_live_one_opencodes(
    tmp_path: Path,
) -> None:
    with ScriptedModelServer() as server:
        served = ServedModel(server.open_route(None), OPENAI, "skill-eval", "scripted")
        host = OpencodeHost()
        env = host.environment(
            host.prepare(tmp_path / "served", Endpoint("scripted", None, served))
        )
    models = Path(env["OPENCODE_MODELS_PATH"])
    assert models.parent == tmp_path / "served"  # its own, deleted with its home
    assert models.read_text(encoding="utf-8") == "{}\n"
    assert env["BUN_JSC_useFTLJIT"] == "0"  # a turn's process is too short for FTL's compiles
    assert "BUN_JSC_useDFGJIT" not in env  # DFG's, on a second thread, speed the turn up
    live = OpencodeHost()
    assert "OPENCODE_MODELS_PATH" not in live.environment(
        live.prepare(tmp_path / "live", Endpoint("live", {"model": "openai/gpt-4.1"}))
    )


def _fake(directory: Path, version: str) -> Path:
    binary = write(directory / "opencode", f"#!/bin/sh\necho {version}\n")
    binary.chmod(0o755)
    return binary


def test_another_version_is_refused_with_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake(tmp_path / "bin", "1.2.3")
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    with pytest.raises(HostNotFoundError) as refused:
        check_opencode(locate_opencode(None, tmp_path))
    message = str(refused.value)
    assert "is opencode 1.2.3" in message
    assert "supports exactly 1.18.33: `npm install opencode-linux-x64@1.18.33`" in message


def test_a_machine_without_ripgrep_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake(tmp_path / "bin", "1.18.33")
    monkeypatch.setenv("PATH", f"{fake.parent}:/nonexistent")
    with pytest.raises(HostNotFoundError, match=r"needs ripgrep \(`rg`\) on PATH"):
        check_opencode(fake)


def test_the_platform_package_is_found_when_nothing_is_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packaged = _fake(tmp_path / "node_modules" / "opencode-linux-x64" / "bin", "1.18.33")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert locate_opencode(None, tmp_path) == packaged.resolve()
    with pytest.raises(HostNotFoundError, match="--skill-eval-opencode /nowhere/opencode"):
        locate_opencode("/nowhere/opencode", tmp_path)
    assert locate_opencode(None, tmp_path / "evals", tmp_path) == packaged.resolve()


def test_its_isolation_variables_belong_to_it() -> None:
    owned = OPENCODE.owned_environment
    for name in ("OPENCODE_CONFIG", "OPENCODE_PERMISSION", "npm_config_registry", "XDG_DATA_HOME"):
        assert owned.owns(name), name
    assert not owned.owns("OPENAI_API_KEY")


def test_the_opencode_option_names_the_binary_that_is_checked(pytester: pytest.Pytester) -> None:
    from tests.support.roots import Group, build, runtime, variant
    from tests.support.runs import skill_eval_args

    fake = _fake(pytester.path / "bin", "9.9.9")
    root = pytester.path / "root"
    group = Group(
        id="g",
        type="description",
        turns=["Hi."],
        tools=["read"],
        runtime=runtime(host="opencode"),
        candidate=variant(),
        scripts={"candidate": [{"text": "Hi."}], "baseline": [{"text": "Hi."}]},
    )
    suite = build(root, [group])
    args = skill_eval_args(root, "--skill-eval-opencode", str(fake), suite=suite)
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{fake} is opencode 9.9.9; *supports exactly 1.18.33*"])
