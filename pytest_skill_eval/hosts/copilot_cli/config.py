"""What configures one Copilot CLI run: its user settings, its MCP servers and the flags that
narrow it.

Settings (`$COPILOT_HOME/settings.json`): the builtin skills disabled by name, the workspace's
own skill directories ignored, hooks off, no update checks. The declared skills are linked into
`$COPILOT_HOME/skills`, its personal skills directory, so nothing is added to the workspace.
Flags: only the declared tools offered (`--available-tools`), every path outside the workspace,
the declared roots and the skills refused by its own path check (no `--allow-all-paths`, the
temporary directory disallowed, the rest `--add-dir`), no custom instructions, no `ask_user`;
declared context is the instructions of a custom agent in `$COPILOT_HOME/agents` (`--agent`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import command_server
from ..layers import SystemLayerError
from .registration import BUILTIN_SKILLS, RUN_COMMAND

# The workspace directories it reads project skills from, ignored (`ignoredSkillsLocations`).
PROJECT_SKILLS = (".github/skills", ".claude/skills", ".agents/skills")
# Where it finds Claude Code commands, which it lists as skills: each `*.md` directly inside. No
# setting ignores the folder, so each command found is disabled by its name.
PROJECT_COMMANDS = ".claude/commands"
# The neutral tools a group declares → Copilot CLI's tools for them.
TOOLS = {"read": ("view",), "write": ("create",), "edit": ("edit",)}
SKILL_TOOL = "skill"
DEFAULT_MODEL = "scripted"
# The custom agent carrying the declared context (`write_agent`).
AGENT = "skill-eval"
# The placeholder key its provider sends; the loopback server ignores it.
LOOPBACK_KEY = "skill-eval-loopback"


def places(workspace: Path, roots: Sequence[str] = ()) -> list[Path]:
    """Where it looks for a project's skills and commands: the workspace, every `--add-dir`
    root, and every directory above them up to `/` (the workspace lies in the definition root,
    whose own skill directories may hold the skill under test)."""
    found: dict[Path, None] = {}
    for place in (workspace, *(Path(root) for root in roots)):
        found |= dict.fromkeys((place, *place.parents))
    return list(found)


def project_commands(where: Sequence[Path]) -> dict[str, Path]:
    """The Claude Code commands it would list as skills from the places `where`, by name (the
    file's stem)."""
    commands: dict[str, Path] = {}
    for place in where:
        try:
            entries = sorted((place / PROJECT_COMMANDS).glob("*.md"))
        except OSError:
            continue
        for entry in entries:
            commands.setdefault(entry.stem, entry)
    return commands


def settings(
    workspace: Path, roots: Sequence[str] = (), declared: Collection[str] = ()
) -> dict[str, Any]:
    """The user settings of one run: its builtin skills and any command it would list as a
    skill disabled, the project skill directories of every place it looks ignored.

    SystemLayerError when a command it would list has the name of a `declared` skill: disabled
    by that name, the declared skill would go with it."""
    where = places(workspace, roots)
    commands = project_commands(where)
    clash = sorted(set(commands) & set(declared))
    if clash:
        raise SystemLayerError(
            f"Copilot CLI would list the command {commands[clash[0]]} as a skill named "
            f"{clash[0]}, the name of a declared skill; rename or move that command (or keep "
            "the suite outside its directory)"
        )
    return {
        "disabledSkills": [*BUILTIN_SKILLS, *(n for n in commands if n not in BUILTIN_SKILLS)],
        "ignoredSkillsLocations": [str(p / d) for p in where for d in PROJECT_SKILLS],
        "disableAllHooks": True,
        "autoUpdate": False,
        "trustedFolders": [],
    }


def write_settings(
    config: Path, workspace: Path, roots: Sequence[str] = (), declared: Collection[str] = ()
) -> None:
    """`settings.json` in the isolated `COPILOT_HOME` (`settings`)."""
    text = json.dumps(settings(workspace, roots, declared), indent=2, sort_keys=True) + "\n"
    (config / "settings.json").write_text(text, encoding="utf-8")


def available_tools(tools: Sequence[str], commands: bool) -> list[str]:
    """Copilot CLI's names of the declared tools, its skill tool, the evaluator's MCP tool."""
    names = [name for tool in tools for name in TOOLS.get(tool, ())]
    names.append(SKILL_TOOL)
    if commands:
        names.append(RUN_COMMAND)
    return list(dict.fromkeys(names))


def command_server_config(environment: Mapping[str, str]) -> str:
    """`--additional-mcp-config` JSON starting the evaluator's declared-commands server, with
    the variables it reads."""
    wanted = ("SKILL_EVAL_COMMANDS", "SKILL_EVAL_WRITABLE_ROOT")
    server = {
        "type": "local",
        "command": str(Path(sys.executable).resolve()),
        "args": ["-I", str(Path(command_server.__file__))],
        "env": {name: environment[name] for name in wanted if name in environment},
        "tools": ["*"],
    }
    return json.dumps({"mcpServers": {command_server.SERVER_NAME: server}})


def write_agent(config: Path, context: str) -> str:
    """A custom agent in the isolated `COPILOT_HOME` whose instructions are the declared
    `context` (custom instructions are off, so this is how context reaches the model); its
    name, for `--agent`."""
    agents = config / "agents"
    agents.mkdir(exist_ok=True)
    head = f"---\nname: {AGENT}\ndescription: The subject of a skill evaluation.\n---\n"
    (agents / f"{AGENT}.agent.md").write_text(head + context + "\n", encoding="utf-8")
    return AGENT


@dataclass(frozen=True)
class Flags:
    """The command-line flags every turn of one run takes."""

    tools: tuple[str, ...]
    roots: tuple[str, ...]
    model: str | None
    mcp: str | None = None
    agent: str | None = None

    def argv(self) -> list[str]:
        """The flags, in order."""
        argv = ["--output-format", "json", "--allow-all-tools", "--no-custom-instructions"]
        argv += ["--no-ask-user", "--disallow-temp-dir", "--disable-builtin-mcps"]
        argv += ["--no-auto-update", "--log-level", "none"]
        argv += ["--available-tools", *self.tools] if self.tools else []
        for root in self.roots:
            argv += ["--add-dir", root]
        if self.mcp is not None:
            argv += ["--additional-mcp-config", self.mcp]
        if self.agent is not None:
            argv += ["--agent", self.agent]
        if self.model is not None:
            argv += ["--model", self.model]
        return argv


def live_model(model: Mapping[str, str] | None) -> str:
    """The model id asked for: the declared one's, else the default."""
    if model is None:
        return DEFAULT_MODEL
    return model["model"].rpartition("/")[2] or DEFAULT_MODEL
