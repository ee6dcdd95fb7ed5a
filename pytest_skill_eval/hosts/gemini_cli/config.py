"""The settings of one Gemini CLI run, its isolated system prompt and its skills directory.

Everything goes into `~/.gemini/settings.json` of the isolated home: no telemetry, usage
statistics or update checks; the API-key auth the loopback route answers; only the tools the
group declares (`tools.core`, so no shell, web or sub-agent tool is offered) plus
`activate_skill` when there are skills; the bundled skills disabled; GEMINI.md
discovery kept to the workspace (`context.memoryBoundaryMarkers: []` stops the walk up from it,
and none is read from the declared resources its file tools may reach); `.env` files above the
workspace ignored; with the guard, every tool call through the BeforeTool hook
(`hosts/hook_guard.py`: Gemini CLI's hooks speak Claude Code's protocol); with declared commands,
the evaluator's MCP server. Not the system settings: 0.61.0 reads that file only where it and
every directory above it belong to root and no one else may write them, which no per-run file
does; a workspace's own settings would win over these, so they are checked instead
(`workspace_layers`).
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import NotRequired, TypedDict

from .. import command_server
from ..context import isolated_prompt as shared_prompt
from .events import NEUTRAL_TOOLS

# The neutral tools a group declares → Gemini CLI's built-in tools.
HOST_TOOLS = {"read": "read_file", "write": "write_file", "edit": "replace"}
SKILL_TOOL = "activate_skill"
# Skills 0.61.0 ships inside its bundle (`bundle/builtin`): never offered to a subject. A
# declared skill of one of these names takes its place (0.61.0 lets a user skill override a
# built-in one of its name), so that name is not disabled: it is the declared skill's.
BUNDLED_SKILLS = ("skill-creator", "antigravity-support")
# The model a scripted run names when the group declares the scripted default.
DEFAULT_MODEL = "gemini-2.5-flash"
# The placeholder key the CLI needs to start; the loopback server ignores it.
LOOPBACK_KEY = "skill-eval-loopback"


class McpServer(TypedDict):
    """The evaluator's MCP server as Gemini CLI starts it, trusted (no confirmation)."""

    command: str
    args: list[str]
    cwd: str
    trust: bool


class Settings(TypedDict):
    """The run's `settings.json`, section by section."""

    privacy: dict[str, bool]
    telemetry: dict[str, bool]
    general: dict[str, bool]
    security: dict[str, dict[str, str]]
    tools: dict[str, list[str]]
    skills: dict[str, list[str]]
    context: dict[str, list[str] | bool]
    advanced: dict[str, bool]
    hooks: NotRequired[dict[str, list[dict[str, object]]]]
    mcpServers: NotRequired[dict[str, McpServer]]


def host_tools(tools: Sequence[str], skills: bool) -> list[str]:
    """Gemini CLI's tools for the declared neutral ones, and `activate_skill` with skills."""
    return [HOST_TOOLS[t] for t in tools if t in HOST_TOOLS] + ([SKILL_TOOL] if skills else [])


def settings(
    tools: Sequence[str],
    guard: bool,
    commands: McpServer | None,
    readable: Sequence[Path] = (),
    declared: Collection[str] = (),
) -> Settings:
    """The run's `settings.json`: `tools` are Gemini CLI's names; `commands` the MCP server;
    `readable` the directories beside the workspace its file tools may reach (the declared
    resources and skill snapshots; the guard keeps them read-only); `declared` the names of
    the declared skills (a bundled skill of one of them is replaced, not disabled)."""
    value: Settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "tools": {"core": list(tools)},
        "skills": {"disabled": [name for name in BUNDLED_SKILLS if name not in declared]},
        "context": {
            "memoryBoundaryMarkers": [],
            "includeDirectories": [str(path) for path in readable],
            "loadMemoryFromIncludeDirectories": False,
        },
        "advanced": {"ignoreLocalEnv": True},
    }
    if guard:
        command = f"{sys.executable} -I {guard_script()}"
        hook: dict[str, object] = {
            "matcher": "*",
            "hooks": [{"type": "command", "command": command}],
        }
        value["hooks"] = {"BeforeTool": [hook]}
    if commands is not None:
        value["mcpServers"] = {command_server.SERVER_NAME: commands.copy()}
    return value


def guard_script() -> Path:
    """The hosts' shared path and tool guard, run as Gemini CLI's BeforeTool hook."""
    from .. import hook_guard

    return Path(hook_guard.__file__)


def command_server_entry(workspace: Path) -> McpServer:
    """The evaluator's MCP server offering the declared commands (it inherits the CLI's
    environment: the group's, with `SKILL_EVAL_COMMANDS`)."""
    return {
        "command": sys.executable,
        "args": ["-I", str(Path(command_server.__file__))],
        "cwd": str(workspace),
        "trust": True,
    }


def isolated_prompt(
    tools: Sequence[str], entries: Sequence[Mapping[str, object]], cwd: Path
) -> str:
    """The evaluator's system prompt in Gemini CLI's words; `${AgentSkills}` is where the CLI
    puts its listing of the installed skills."""
    return shared_prompt(
        "Gemini CLI", tools, NEUTRAL_TOOLS, SKILL_TOOL, entries, cwd, listing="${AgentSkills}"
    )
