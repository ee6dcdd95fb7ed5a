"""runtime.prompt, declared context and thinking on Claude Code: flags, texts, refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_core import PydanticCustomError

from pytest_skill_eval.definitions import DefinitionError
from pytest_skill_eval.definitions.loader import parse_group
from pytest_skill_eval.errors import HostError
from pytest_skill_eval.hosts import context
from pytest_skill_eval.hosts.base import Endpoint, Launch
from pytest_skill_eval.hosts.claude_code import prompt
from pytest_skill_eval.hosts.claude_code.binary import ClaudeCodeBinary
from pytest_skill_eval.hosts.claude_code.host import ClaudeCodeHost
from pytest_skill_eval.hosts.claude_code.registration import THINKING as CLAUDE_CODE_THINKING
from pytest_skill_eval.hosts.registry import registered
from tests.hosts.test_claude_code_commands import argv_for

SEED = Path(__file__).resolve().parents[1] / "definitions" / "data" / "seed" / "groups"


def manifest(directory: Path) -> Path:
    """A context delivery manifest with one declared file that needs escaping."""
    entries = [
        {
            "declaredPath": "context/contract.md",
            "files": [{"path": "contract.md", "sha256": "x", "content": "status <b> & 'ok'\n"}],
        }
    ]
    path = directory / "context-manifest.json"
    path.write_text(json.dumps({"schema_version": 1, "entries": entries}), encoding="utf-8")
    return path


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_isolated_replaces_the_hosts_prompt_with_the_evaluators(tmp_path: Path) -> None:
    environment = {
        "SKILL_EVAL_PROMPT_MODE": "isolated",
        "SKILL_EVAL_CONTEXT_MANIFEST": str(manifest(tmp_path)),
    }
    argv = argv_for(
        tmp_path / "run", tools=("read", "run_command"), command_tool=True, environment=environment
    )
    assert "--append-system-prompt-file" not in argv
    text = Path(flag(argv, "--system-prompt-file")).read_text(encoding="utf-8")
    assert text.startswith("You are an expert coding assistant operating inside Claude Code")
    assert "- Read: Read a file\n- mcp__skill-eval__run_command: Run one declared" in text
    # The declared context in the same markup as on Pi, escaped the same way.
    assert '<context declared-path="context/contract.md">' in text
    assert "<file path=\"contract.md\">\nstatus &lt;b&gt; &amp; 'ok'\n</file>" in text
    assert text.endswith(f"Current working directory: {tmp_path / 'run'}")


def test_host_keeps_the_hosts_prompt_and_appends_the_declared_context(tmp_path: Path) -> None:
    environment = {
        "SKILL_EVAL_PROMPT_MODE": "host",
        "SKILL_EVAL_CONTEXT_MANIFEST": str(manifest(tmp_path)),
    }
    argv = argv_for(tmp_path / "run", tools=("read",), environment=environment)
    assert "--system-prompt-file" not in argv
    text = Path(flag(argv, "--append-system-prompt-file")).read_text(encoding="utf-8")
    assert text.startswith("<declared_context>\n<context declared-path=")
    assert text.endswith("</declared_context>")
    # Nothing declared: nothing appended, the host's prompt is left as it is.
    bare = argv_for(
        tmp_path / "bare", tools=("read",), environment={"SKILL_EVAL_PROMPT_MODE": "host"}
    )
    assert "--append-system-prompt-file" not in bare
    assert "--system-prompt-file" not in bare


@pytest.mark.parametrize(
    ("level", "flags", "env"),
    [
        (None, [], {}),
        ("off", [], {"CLAUDE_CODE_DISABLE_THINKING": "1"}),
        ("low", ["--effort", "low"], {}),
        ("xhigh", ["--effort", "xhigh"], {}),
        ("max", ["--effort", "max"], {}),
    ],
)
def test_thinking_levels_become_claude_codes_knobs(
    tmp_path: Path, level: str | None, flags: list[str], env: dict[str, str]
) -> None:
    host = ClaudeCodeHost()
    model = {"model": "anthropic/claude-sonnet-4-5"} | ({"thinking": level} if level else {})
    root = tmp_path / "run"
    root.mkdir()
    home = host.prepare(root, Endpoint(mode="scripted", model=None))
    launch = Launch(
        cwd=root, prompts=("p",), one_shot=False, events_path=root / "e",
        stderr_path=root / "s", model=model,
    )  # fmt: skip
    command = host.command(ClaudeCodeBinary(Path("claude"), "2.1.332"), launch, home)
    argv = command.argv
    assert ("--effort" in argv) == bool(flags)
    if flags:
        assert argv[argv.index("--effort") : argv.index("--effort") + 2] == flags
    environment = command.env
    assert environment.get("CLAUDE_CODE_DISABLE_THINKING") == env.get(
        "CLAUDE_CODE_DISABLE_THINKING"
    )


def test_a_level_claude_code_cannot_express_is_refused() -> None:
    with pytest.raises(HostError, match="'minimal' has no Claude Code equivalent"):
        prompt.thinking_settings("minimal")
    assert prompt.THINKING_LEVELS == CLAUDE_CODE_THINKING


def _seed(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((SEED / "declared-commands.json").read_text("utf-8"))
    return document | changes


def test_the_refusal_comes_at_collection_for_declared_and_chosen_hosts(tmp_path: Path) -> None:
    runtime = {
        "host": "claude-code",
        "prompt": "isolated",
        "session": False,
        "extensions": [],
        "environment": {"literal": {}, "inherit": []},
    }
    model = {"model": "anthropic/claude-sonnet-4-5", "thinking": "minimal"}
    with pytest.raises(DefinitionError, match="'minimal' has no Claude Code equivalent"):
        parse_group(_seed(runtime=runtime, model=model), tmp_path / "g.json", registered())
    on_pi = parse_group(_seed(model=model), tmp_path / "g.json", registered())
    # A chosen host is checked the same way (the plugin names the group and the host).
    with pytest.raises(PydanticCustomError, match="'minimal' has no Claude Code equivalent"):
        on_pi.on_host("claude-code")
    accepted = parse_group(
        _seed(model=model | {"thinking": "high"}), tmp_path / "g.json", registered()
    )
    assert accepted.on_host("claude-code").effective_runtime.host == "claude-code"


def test_an_unreadable_manifest_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HostError, match="cannot be read"):
        context.load_context(str(tmp_path / "missing.json"))
