"""Codex without the binary: its captured event streams, the generated config, argv, checks."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts import checked_binary, host_for
from pytest_skill_eval.hosts.base import Endpoint, Launch
from pytest_skill_eval.hosts.binaries import PACKAGE_ROOT
from pytest_skill_eval.hosts.codex.binary import (
    UNCONFINED_OPTION,
    CodexSetupError,
    check_codex,
    check_machine,
    native_codex,
)
from pytest_skill_eval.hosts.codex.config import CodexConfig, command_server_table, sandbox_mode
from pytest_skill_eval.hosts.codex.events import EventTranslator, named_paths, shell_script
from pytest_skill_eval.hosts.codex.host import (
    CodexHost,
    codex_config,
    install_skills,
    rollout_mentions,
)
from pytest_skill_eval.hosts.codex.registration import PINNED
from pytest_skill_eval.hosts.codex.sandbox import wrap
from pytest_skill_eval.hosts.observation import Observation
from pytest_skill_eval.hosts.options import HostOptions
from tests.support.files import write

DATA = Path(__file__).parent / "data" / "codex"
SCRATCH_SKILL = "/scratch/cx/home/.codex/skills/greet/SKILL.md"


def events(name: str) -> list[dict[str, Any]]:
    """A captured `codex exec --json` stream."""
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def translate(obs: Observation, translator: EventTranslator, name: str, prompt: str) -> None:
    obs.begin_turn(len(obs.turns) + 1, prompt, prompt)
    for event in events(name):
        translator.apply(event)


def test_a_shell_read_of_a_skill_is_its_snapshot_read_with_usage_and_response() -> None:
    obs = Observation()
    translator = EventTranslator(obs, {SCRATCH_SKILL: "/snap/greet/SKILL.md"})
    translate(obs, translator, "skill-read.jsonl", "Use greet")
    (turn,) = obs.turns
    assert turn.settled
    assert turn.reads == ["/snap/greet/SKILL.md"]
    (call,) = turn.tool_activity
    assert call["toolName"] == "exec_command"
    assert call["args"] == {"command": f"/bin/bash -lc 'cat {SCRATCH_SKILL}'", "exitCode": 0}
    assert (call["completed"], call["isError"]) == (True, False)
    assert turn.response.startswith("DONE. Tool result was:")
    assert turn.usage == {
        "input": 20,
        "output": 10,
        "cacheRead": 0,
        "cacheWrite": 0,
        "cost": {"total": 0.0},
    }
    assert turn.assistant_error is None


def test_usage_is_priced_at_the_served_models_prices() -> None:
    obs = Observation()
    prices = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}
    translate(obs, EventTranslator(obs, {}, prices), "skill-read.jsonl", "Use greet")
    (turn,) = obs.turns
    assert turn.usage is not None
    assert turn.usage["cost"] == {"total": (20 * 3.0 + 10 * 15.0) / 1e6}


def test_warning_items_are_kept_in_the_transcript_not_as_errors() -> None:
    obs = Observation()
    translate(obs, EventTranslator(obs, {}), "warnings-text.jsonl", "ping")
    (turn,) = obs.turns
    assert turn.response == "PONG from fake model"
    assert turn.assistant_error is None
    warnings = [m for m in obs.transcript if m.get("role") == "host"]
    assert len(warnings) == 3
    assert "Model metadata for `fake-model` not found" in str(warnings[-1]["warning"])


def test_a_resumed_turn_counts_only_its_own_usage() -> None:
    obs = Observation()
    translator = EventTranslator(obs, {})
    translate(obs, translator, "resume-turn1.jsonl", "first")
    translate(obs, translator, "resume-turn2.jsonl", "second")
    first, second = obs.turns
    # Codex reports the thread's total (30/15) after turn two; turn one used 10/5.
    assert first.usage is not None
    assert second.usage is not None
    assert first.usage["input"] == 10
    assert (second.usage["input"], second.usage["output"]) == (20, 10)
    assert second.reads == ["/scratch/cx/wsg/note.txt"]


def test_a_failed_command_reads_nothing_and_a_failed_turn_is_an_assistant_error() -> None:
    obs = Observation()
    translator = EventTranslator(obs, {})
    obs.begin_turn(1, "p", "p")
    item = {"id": "item_0", "type": "command_execution", "command": "cat /secret"}
    translator.apply({"type": "item.started", "item": {**item, "status": "in_progress"}})
    done = {**item, "exit_code": 1, "status": "failed", "aggregated_output": "denied"}
    translator.apply({"type": "item.completed", "item": done})
    translator.apply({"type": "turn.failed", "error": {"message": "stream closed"}})
    (turn,) = obs.turns
    assert turn.reads == []
    assert turn.tool_activity[0]["isError"] is True
    assert turn.settled
    assert turn.assistant_error == "Codex reported: stream closed"


def test_a_file_change_is_an_apply_patch_call() -> None:
    obs = Observation()
    obs.begin_turn(1, "p", "p")
    changes = [{"path": "/ws/notes.txt", "kind": "update"}]
    item = {"id": "item_1", "type": "file_change", "changes": changes, "status": "completed"}
    EventTranslator(obs, {}).apply({"type": "item.completed", "item": item})
    (call,) = obs.turns[0].tool_activity
    assert (call["toolName"], call["args"], call["isError"]) == (
        "apply_patch",
        {"changes": changes},
        False,
    )
    assert obs.turns[0].reads == []


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("/bin/bash -lc 'cat /a/SKILL.md'", ["/a/SKILL.md"]),
        ("/bin/bash -lc \"sed -n '1,40p' notes.txt\"", ["1,40p", "notes.txt"]),
        ("/bin/bash -lc 'head -5 a.txt | wc -l > out.txt'", ["a.txt"]),
        ("/bin/bash -lc 'cd docs && cat guide.md'", ["docs", "guide.md"]),
        ("/bin/bash -lc 'cat \"unterminated'", []),
    ],
)
def test_the_paths_a_command_names_leave_out_options_and_redirect_targets(
    command: str, paths: list[str]
) -> None:
    assert named_paths(command) == paths


def test_a_command_that_is_not_a_shell_wrapper_is_its_own_script() -> None:
    assert shell_script("rg -n foo") == "rg -n foo"
    assert shell_script("/bin/bash -lc 'ls'") == "ls"


def test_the_generated_config_is_the_hardened_one_with_the_loopback_provider() -> None:
    config = CodexConfig(base_url="http://127.0.0.1:9/r/t/v1", effort="high", sandbox="read-only")
    parsed = tomllib.loads(config.toml())
    assert parsed["model"] == "gpt-5.5"
    assert parsed["model_provider"] == "skill_eval"
    assert parsed["model_providers"]["skill_eval"] == {
        "name": "pytest-skill-eval loopback",
        "base_url": "http://127.0.0.1:9/r/t/v1",
        "wire_api": "responses",
        "env_key": "SKILL_EVAL_CODEX_KEY",
        "request_max_retries": 0,
        "stream_max_retries": 0,
    }
    assert parsed["check_for_update_on_startup"] is False
    assert parsed["web_search"] == "disabled"
    assert parsed["analytics"] == {"enabled": False}
    assert parsed["otel"] == {"exporter": "none"}
    assert not any(parsed["features"].values())
    assert {"plugins", "apps", "hooks"} <= set(parsed["features"])
    assert parsed["skills"]["bundled"] == {"enabled": False}
    assert parsed["sandbox_mode"] == "read-only"
    assert parsed["approval_policy"] == "never"
    assert parsed["project_root_markers"] == []
    assert parsed["model_reasoning_effort"] == "high"
    assert config.enforced(confined=False)["reads"] == "unconfined"
    assert "mount namespace" in str(config.enforced(confined=True)["reads"])


def test_declared_tools_choose_the_sandbox() -> None:
    assert sandbox_mode(("read",)) == "read-only"
    assert sandbox_mode(()) == "read-only"
    assert sandbox_mode(("read", "edit")) == "workspace-write"
    assert sandbox_mode(("write",)) == "workspace-write"


def _launch(tmp_path: Path, **extra: Any) -> Launch:
    fields: dict[str, Any] = {
        "cwd": tmp_path / "ws",
        "prompts": ("Do it.", "Again."),
        "one_shot": False,
        "events_path": tmp_path / "events.jsonl",
        "stderr_path": tmp_path / "stderr.log",
    }
    return Launch(**(fields | extra))


def test_the_declared_model_and_thinking_level_reach_the_config(tmp_path: Path) -> None:
    launch = _launch(tmp_path, model={"model": "openai/gpt-5.4", "thinking": "off"})
    config = codex_config(launch, None, None)
    assert (config.model, config.effort, config.base_url) == ("gpt-5.4", "none", None)
    assert "model_provider" not in tomllib.loads(config.toml())


def test_argv_mentions_the_target_on_turn_one_and_writes_config_and_skills(
    tmp_path: Path,
) -> None:
    snapshot = tmp_path / "snap" / "greeter"
    write(snapshot / "SKILL.md", "---\nname: greet\ndescription: Greets.\n---\nSay ahoy.\n")
    host = host_for("codex")
    assert isinstance(host, CodexHost)
    home = host.prepare(_root(tmp_path / "home-root"), Endpoint(mode="live", model=None))
    launch = _launch(
        tmp_path,
        tools=("read", "write"),
        skills=(snapshot,),
        target=snapshot / "SKILL.md",
        environment={"SKILL_EVAL_PROMPT_MODE": "isolated"},
    )
    command = host.command(_Binary(), launch, home)
    assert command.argv == ["/bin/codex", "app-server", "--listen", "stdio://", "--strict-config"]
    assert host.first_prompt == "$greet Do it."
    parsed = tomllib.loads((home.config / "config.toml").read_text(encoding="utf-8"))
    assert parsed["sandbox_mode"] == "workspace-write"
    instructions = Path(parsed["model_instructions_file"])
    assert "skill evaluation" in instructions.read_text(encoding="utf-8")
    assert (home.config / "skills" / "greet").resolve() == snapshot.resolve()
    assert host.aliases[str(home.config / "skills" / "greet" / "SKILL.md")] == str(
        (snapshot / "SKILL.md").resolve()
    )
    env = command.env
    assert env["CODEX_HOME"] == str(home.config)
    assert "OPENAI_API_KEY" not in env
    assert host.enforced is not None
    assert host.enforced["sandbox"] == "workspace-write"


def test_host_prompt_mode_keeps_codex_instructions(tmp_path: Path) -> None:
    host = CodexHost()
    home = host.prepare(_root(tmp_path / "root"), Endpoint(mode="live", model=None))
    launch = _launch(tmp_path, environment={"SKILL_EVAL_PROMPT_MODE": "host"})
    host.command(_Binary(), launch, home)
    parsed = tomllib.loads((home.config / "config.toml").read_text(encoding="utf-8"))
    assert "model_instructions_file" not in parsed


def _manifest(tmp_path: Path) -> str:
    """A context delivery manifest declaring one file (with text TOML must escape)."""
    entry = {
        "declaredPath": "context/notes",
        "files": [{"path": "notes.md", "content": 'Say "hi" \\ é 😀\n'}],
    }
    path = write(tmp_path / "manifest.json", json.dumps({"schema_version": 1, "entries": [entry]}))
    return str(path)


@pytest.mark.parametrize("mode", ["isolated", "host"])
def test_declared_context_reaches_codex_in_both_prompt_modes(tmp_path: Path, mode: str) -> None:
    host = CodexHost()
    home = host.prepare(_root(tmp_path / "root"), Endpoint(mode="live", model=None))
    environment = {
        "SKILL_EVAL_PROMPT_MODE": mode,
        "SKILL_EVAL_CONTEXT_MANIFEST": _manifest(tmp_path),
    }
    host.command(_Binary(), _launch(tmp_path, environment=environment), home)
    parsed = tomllib.loads((home.config / "config.toml").read_text(encoding="utf-8"))
    block = '<context declared-path="context/notes">\n<file path="notes.md">\nSay "hi" \\ é 😀\n'
    if mode == "isolated":
        # The evaluator's instructions replace Codex's; the context comes after them.
        text = Path(parsed["model_instructions_file"]).read_text(encoding="utf-8")
        assert text.startswith("You are a coding assistant operating inside Codex")
        assert block in text
        assert "developer_instructions" not in parsed
    else:
        # Codex keeps its own instructions; the context is added as developer instructions.
        assert "model_instructions_file" not in parsed
        assert block in parsed["developer_instructions"]


def test_two_skills_with_one_name_are_refused(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        write(tmp_path / folder / "SKILL.md", "---\nname: same\n---\n")
    (tmp_path / "home").mkdir()
    with pytest.raises(ValueError, match="'same'"):
        install_skills(tmp_path / "home", [tmp_path / "a", tmp_path / "b"])


def test_the_rollout_names_each_explicitly_mentioned_skill(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions" / "2026" / "12" / "01"
    sessions.mkdir(parents=True)
    (sessions / "rollout-x.jsonl").write_bytes((DATA / "rollout-mention.jsonl").read_bytes())
    assert rollout_mentions(tmp_path, tmp_path / "sessions") == [
        ("greet", "/scratch/cx/wsg/.agents/skills/greet/SKILL.md")
    ]


def test_unconfined_reads_without_the_opt_in_are_refused() -> None:
    with pytest.raises(CodexSetupError, match=UNCONFINED_OPTION):
        check_machine(False, confined=False)
    check_machine(True, confined=False)
    check_machine(False, confined=True)


def test_the_confinement_binds_only_what_the_run_may_touch(tmp_path: Path) -> None:
    for name in ("ws", "res", "home", "soft"):
        (tmp_path / name).mkdir()
    args = wrap(
        Path("/b/bwrap"),
        ["codex", "exec"],
        software=[tmp_path / "soft"],
        writable=[tmp_path / "ws", tmp_path / "home"],
        readable=[tmp_path / "res", tmp_path / "missing"],
        cwd=tmp_path / "ws",
    )
    text = " ".join(args)
    assert args[:3] == ["/b/bwrap", "--die-with-parent", "--unshare-pid"]
    assert "--tmpfs /tmp" in text
    assert f"--ro-bind {tmp_path}/res {tmp_path}/res" in text
    assert f"--bind {tmp_path}/ws {tmp_path}/ws" in text
    assert "missing" not in text  # a path that does not exist is not bound
    assert "/home " not in text.replace(f"{tmp_path}/home", "")
    assert args[-3:] == ["--", "codex", "exec"]


def test_an_unknown_host_has_no_binary() -> None:
    with pytest.raises(LookupError, match="cursor"):
        checked_binary("cursor", HostOptions(), Path())


class _Binary:
    path = Path("/bin/codex")
    version = "0.171.0"


def _root(path: Path) -> Path:
    path.mkdir()
    return path


def test_the_pinned_launcher_is_replaced_by_the_native_binary_it_would_exec() -> None:
    launcher = PACKAGE_ROOT / "node_modules" / ".bin" / "codex"
    found = native_codex(launcher)
    assert found is not None
    native, env = found
    assert native.read_bytes()[:4] == b"\x7fELF"  # a native program, not a Node script
    package = launcher.resolve().parent.parent
    assert env == {"CODEX_MANAGED_PACKAGE_ROOT": str(package), "CODEX_MANAGED_BY_NPM": "1"}
    checked = check_codex(launcher)
    assert (checked.path, checked.executable, checked.version) == (launcher, native, PINNED)
    assert dict(checked.launcher_env) == env
    # Pointed at the native binary itself (or anything but the launcher), that is what runs.
    assert native_codex(native) is None
    assert check_codex(native).executable == native


def test_a_launcher_without_its_platform_package_runs_as_it_is(tmp_path: Path) -> None:
    launcher = write(tmp_path / "codex" / "bin" / "codex.js", "#!/usr/bin/env node\n")
    assert native_codex(launcher) is None


def test_a_declared_command_call_is_the_neutral_run_command() -> None:
    obs = Observation()
    obs.begin_turn(1, "p", "p")
    translator = EventTranslator(obs, {})
    base = {"type": "mcp_tool_call", "server": "skill-eval", "tool": "run_command"}
    refused = {"content": [{"type": "text", "text": "unknown command"}], "is_error": True}
    for number, (command, status, result) in enumerate(
        [("look", "completed", {"content": []}), ("rm-rf", "completed", refused)]
    ):
        item = base | {"id": f"item_{number}", "arguments": {"command": command}}
        translator.apply({"type": "item.started", "item": item | {"status": "in_progress"}})
        translator.apply(
            {"type": "item.completed", "item": item | {"status": status, "result": result}}
        )
    other = {"id": "item_9", "type": "mcp_tool_call", "server": "docs", "tool": "search"}
    failed = other | {"arguments": {}, "status": "failed", "error": {"message": "no"}}
    translator.apply({"type": "item.completed", "item": failed})
    assert [(a["toolName"], a["args"], a["isError"]) for a in obs.turns[0].tool_activity] == [
        ("run_command", {"command": "look"}, False),
        ("run_command", {"command": "rm-rf"}, True),
        ("mcp__docs__search", {}, True),
    ]


def test_declared_commands_get_the_evaluators_server_in_the_config() -> None:
    table = command_server_table("/py", "/srv.py", "/ws", ["PATH", "GREETING", "PATH"], 152.0)
    config = CodexConfig(base_url=None, command_server=table)
    server = tomllib.loads(config.toml())["mcp_servers"]["skill-eval"]
    assert server["command"] == "/py"
    assert server["args"] == ["-I", "/srv.py"]
    assert server["cwd"] == "/ws"
    assert server["env_vars"] == ["GREETING", "PATH"]  # names only: no value in the file
    assert server["tool_timeout_sec"] == 152.0
    assert server["required"] is True
    assert server["default_tools_approval_mode"] == "approve"
    assert "mcp_servers" not in tomllib.loads(CodexConfig(base_url=None).toml())


def test_one_command_gives_the_launch_its_whole_environment(tmp_path: Path) -> None:
    """What the npm launcher would have set comes with the argv, from the same call: no
    environment is read before, or apart from, the command line it belongs to."""

    class Launched(_Binary):
        launcher_env = (("CODEX_MANAGED_BY_NPM", "1"),)

    host = CodexHost()
    home = host.prepare(_root(tmp_path / "root"), Endpoint(mode="live", model=None))
    command = host.command(Launched(), _launch(tmp_path), home)
    assert command.env["CODEX_MANAGED_BY_NPM"] == "1"
    assert command.env["CODEX_HOME"] == str(home.config)
