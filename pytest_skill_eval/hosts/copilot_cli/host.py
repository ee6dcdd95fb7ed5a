"""GitHub Copilot CLI as a subject host: an isolated home, its settings written for the run,
a process per turn.

The operator's `~/.copilot` (settings, skills, MCP servers, sessions, credentials), `~/.agents`
and `~/.claude` never reach it: HOME, COPILOT_HOME, the XDG directories and TMPDIR are ours. It
runs offline (`COPILOT_OFFLINE`, no GitHub sign-in, telemetry or update check) against the
evaluator's provider (`COPILOT_PROVIDER_BASE_URL`, OpenAI chat completions), with its builtin
skills disabled, the workspace's skill directories ignored and the declared skills, linked to
their snapshots, the only ones in `$COPILOT_HOME/skills`; its own path check refuses every path
outside the workspace, the declared roots and the skills (`config.py`).
"""

from __future__ import annotations

import json
from pathlib import Path

from ...modelserver.wire import OPENAI
from .. import setup
from ..base import Command, Endpoint, Executable, Home, Launch, Talk
from ..context import declared_context_block, load_context
from ..registry import Registered
from .config import (
    LOOPBACK_KEY,
    Flags,
    available_tools,
    command_server_config,
    live_model,
    write_agent,
    write_settings,
)
from .dialogue import CopilotCliDialogue
from .environment import PACKAGE_CACHE, QUIET, package_cache
from .registration import BUILTIN_SKILLS, COPILOT_CLI

# Every run's session, in its own isolated COPILOT_HOME: one fixed id, so the session folder
# its system prompt names is the same in a recording and its replay.
SESSION = "5ce1e7a1-0000-4000-8000-000000000001"


def allowed_roots(launch: Launch, config: Path) -> tuple[str, ...]:
    """The declared resources, the skills' snapshots and the skills directory: with the
    workspace, every path its path check lets a tool reach."""
    declared = json.loads(launch.environment.get("SKILL_EVAL_ALLOWED_ROOTS") or "[]")
    roots = [p for p in declared if isinstance(p, str)]
    roots += [str(skill.resolve()) for skill in launch.skills]
    roots.append(str(config / "skills"))
    return tuple(dict.fromkeys(roots))


class CopilotCliHost:
    """The GitHub Copilot CLI (`@github/copilot`'s native build, pinned)."""

    registration = Registered(COPILOT_CLI.name)

    def __init__(self) -> None:
        self._base_url: str | None = None
        self._skills: dict[str, str] = {}
        self._command = "copilot"
        self._flags = Flags((), (), None)
        self._root: Path | None = None

    def prepare(self, root: Path, endpoint: Endpoint) -> Home:
        """HOME, COPILOT_HOME, the XDG directories and TMPDIR under `root`."""
        config = root / "home" / ".copilot"
        home = setup.make_home(root, config, *setup.xdg_dirs(root / "home").values())
        self._root = root
        if endpoint.served is not None:
            self._base_url = endpoint.served.route.base_url(OPENAI)
        return home

    def environment(self, home: Home) -> dict[str, str]:
        """Operator PATH and locale, our home, offline, the evaluator's provider."""
        env = setup.isolated_environment(home, COPILOT_HOME=str(home.config)) | QUIET
        env |= {name: str(path) for name, path in setup.xdg_dirs(home.home).items()}
        env[PACKAGE_CACHE] = str(package_cache(COPILOT_CLI.version))
        if self._base_url is not None:
            env["COPILOT_PROVIDER_BASE_URL"] = self._base_url
            env["COPILOT_PROVIDER_API_KEY"] = LOOPBACK_KEY
        return env

    def command(self, binary: Executable, launch: Launch, home: Home) -> Command:
        """Writes the run's settings and skills; turn one's command line and the isolated
        environment."""
        env = self.environment(home)
        env["COPILOT_MODEL"] = live_model(launch.model)
        return Command(self.argv(binary, launch, home), env)

    def argv(self, binary: Executable, launch: Launch, home: Home) -> list[str]:
        """Writes the run's settings and skills; the command line of turn one."""
        installed = setup.install_skills(
            home.config, launch.skills, COPILOT_CLI.display_name, BUILTIN_SKILLS
        )
        self._skills = {name: str(snapshot) for name, snapshot in installed.items()}
        self._skills |= setup.link_paths(home.config, launch.skills, installed)
        mcp = command_server_config(launch.environment) if launch.command_tool else None
        tools = available_tools(launch.tools, launch.command_tool)
        entries = load_context(launch.environment.get("SKILL_EVAL_CONTEXT_MANIFEST", ""))
        agent = write_agent(home.config, declared_context_block(entries)) if entries else None
        roots = allowed_roots(launch, home.config)
        write_settings(home.config, launch.cwd, roots, installed)
        self._flags = Flags(tuple(tools), roots, None, mcp, agent)
        self._command = str(binary.path)
        return self._argv(launch.prompts[0], 1)

    def usage_file(self, number: int) -> Path:
        """Where turn `number`'s process writes the session's token totals."""
        if self._root is None:
            raise RuntimeError("Copilot CLI's home was not prepared")
        return self._root / f"usage-{number}.json"

    def _argv(self, prompt: str, number: int, *more: str) -> list[str]:
        argv = [self._command, "-p", prompt, *(more or ("--session-id", SESSION))]
        argv += self._flags.argv()
        return [*argv, "--usage-output-file", str(self.usage_file(number))]

    def resume_argv(self, session: str, prompt: str, number: int) -> list[str]:
        """The command line of a later turn: the same session, the next prompt."""
        return self._argv(prompt, number, "--resume", session)

    def converse(self, talk: Talk) -> CopilotCliDialogue:
        """`--output-format json` events pumped into the observation, a process per turn."""
        dialogue = CopilotCliDialogue(talk, self, self._skills)
        # Its skill tool is the model's to call: no way to hand a skill over explicitly.
        dialogue.observation.delivery_unavailable(talk.launch.target)
        return dialogue

    def cleanup(self, home: Home) -> None:
        """Copilot CLI keeps its state under COPILOT_HOME and the XDG dirs, inside the home."""
