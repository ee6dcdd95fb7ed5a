"""Claude Code as a subject host: isolated config dir, user-scope skills, a PreToolUse guard.

The operator's `~/.claude`, CLAUDE.md files, plugins, MCP servers and bundled skills never reach
it: HOME, `CLAUDE_CONFIG_DIR` and TMPDIR are ours, the only setting source is that empty user
scope (which holds exactly the declared skills, linked to their snapshots, so nothing is added to
the workspace), and everything else arrives on the command line. One-shot groups use `-p`;
multi-turn ones keep one process reading stream-json prompts, one after the other settled.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...modelserver.wire import ANTHROPIC
from .. import command_server, hook_guard
from ..base import Command, Endpoint, Executable, Home, Launch, Talk
from ..dialogue import StreamDialogue
from ..observation import Observation
from ..process import ProcessOutcome
from ..registry import Registered
from ..setup import install_skills, isolated_environment, make_home
from .events import StreamTranslator
from .prompt import prompt_arguments, thinking_settings
from .registration import CLAUDE_CODE, QUIET
from .registration import RUN_COMMAND as CLAUDE_CODE_RUN_COMMAND

GUARD = Path(hook_guard.__file__)
COMMAND_SERVER = Path(command_server.__file__)
# The neutral tools a group declares → Claude Code's built-in tools.
HOST_TOOLS = {"read": "Read", "write": "Write", "edit": "Edit"}
# The placeholder key a host-side process needs to start; the loopback server ignores it.
LOOPBACK_KEY = "skill-eval-loopback"
BUILTIN_PLUGINS = ("plugin-authoring", "agents-md", "privacy")


def settings(guard: bool) -> dict[str, object]:
    """Built-in plugins off and, with the guard, every tool call through the PreToolUse hook."""
    value: dict[str, object] = {
        "enabledPlugins": {f"cc-plugin-{p}@builtin": False for p in BUILTIN_PLUGINS},
    }
    if guard:
        command = f"{sys.executable} -I {GUARD}"
        value["hooks"] = {
            "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]
        }
    return value


def host_tools(tools: Sequence[str], skills: bool) -> list[str]:
    """The host's tools for the declared neutral ones, and `Skill` when there are skills."""
    return [HOST_TOOLS[t] for t in tools if t in HOST_TOOLS] + (["Skill"] if skills else [])


def mcp_config() -> dict[str, object]:
    """The evaluator's own MCP server, the only one Claude Code gets: declared commands.

    It inherits Claude Code's environment (the group's, with `SKILL_EVAL_COMMANDS` and the
    workspace), as Pi's command tool inherits Pi's.
    """
    server = {"type": "stdio", "command": sys.executable, "args": ["-I", str(COMMAND_SERVER)]}
    return {"mcpServers": {command_server.SERVER_NAME: server}}


class ClaudeCodeDialogue(StreamDialogue[StreamTranslator]):
    """stream-json out (both modes); prompts in argv (one shot) or as stream-json lines."""

    def __init__(self, talk: Talk, skills: Mapping[str, Path]) -> None:
        super().__init__(talk)
        self._translator = translator = StreamTranslator(self._observation, skills)
        if talk.launch.command_tool:
            translator.command_server = command_server.SERVER_NAME

    def run(self) -> tuple[Observation, ProcessOutcome]:
        """One shot, or every prompt in turn (the target skill's command on turn one)."""
        launch, obs = self._launch, self._observation
        if launch.one_shot:
            obs.begin_turn(1, launch.prompts[0], launch.prompts[0]).prompt_accepted = True
            self._pump(lambda: self._ended)
            return self._finish()
        command = None
        if launch.target is not None:
            command = next(
                (n for n, p in self._translator.skills.items() if p == launch.target), None
            )
        obs.delivery = {
            "kind": "natural-prompt" if launch.target is None else "unavailable",
            "turn": 1,
            "targetPath": str(launch.target) if launch.target else None,
        }
        if not self._until_gate():  # a pre-started Claude Code waits here, unprompted
            return obs, self._outcome
        for number, prompt in enumerate(launch.prompts, start=1):
            delivered = f"/{command} {prompt}" if command and number == 1 else prompt
            turn = self._begin_turn(number, prompt, delivered)
            message = {"role": "user", "content": delivered}
            if number == 1:
                launch.gate.prompting()
            try:
                self._process.send({"type": "user", "message": message})
            except OSError as error:
                obs.protocol_error("process-error", message=f"stdin closed: {error}")
                break
            turn.prompt_accepted = True
            settled = self._pump(lambda turn=turn: turn.settled)  # type: ignore[misc]
            if number == 1 and command is not None:
                self._confirm_delivery(command)
            if not settled:
                break
            self._after_turn(turn)
            if turn.assistant_error is not None:
                break  # later turns would build on a failed one
        self._process.close_stdin()
        self._pump(lambda: self._ended)
        return self._finish()

    def _confirm_delivery(self, command: str) -> None:
        """The host echoed the prompt as the skill's command: the target went in explicitly."""
        if command in self._translator.delivered_commands and self._launch.target is not None:
            self._observation.delivery = {
                "kind": "explicit-skill-command",
                "turn": 1,
                "targetPath": str(self._launch.target),
                "command": command,
            }


class ClaudeCodeHost:
    """The Claude Code CLI (`@anthropic-ai/claude-code`, pinned)."""

    registration = Registered(CLAUDE_CODE.name)

    def __init__(self) -> None:
        self._base_url: str | None = None
        self._skills: dict[str, Path] = {}

    def prepare(self, root: Path, endpoint: Endpoint) -> Home:
        """HOME, its `.claude` config dir and TMPDIR under `root`; nothing of the operator's."""
        home = make_home(root, root / "home" / ".claude")
        if endpoint.served is not None:
            self._base_url = endpoint.served.route.base_url(ANTHROPIC)
        return home

    def command(self, binary: Executable, launch: Launch, home: Home) -> Command:
        """The headless command line and its environment; installs the declared skills into
        the isolated scope. The declared thinking is a flag or a variable."""
        effort, thinking_env = thinking_settings((launch.model or {}).get("thinking"))
        return Command(self._argv(binary, launch, home, effort), self._env(home) | thinking_env)

    def _env(self, home: Home) -> dict[str, str]:
        """Operator PATH and locale, our home dirs, the loopback endpoint, no traffic beside it."""
        env = isolated_environment(home, CLAUDE_CONFIG_DIR=str(home.config)) | QUIET
        if self._base_url is not None:
            env |= {"ANTHROPIC_BASE_URL": self._base_url, "ANTHROPIC_API_KEY": LOOPBACK_KEY}
        return env

    def _argv(self, binary: Executable, launch: Launch, home: Home, effort: list[str]) -> list[str]:
        self._skills = install_skills(home.config, launch.skills, CLAUDE_CODE.display_name)
        offered = host_tools(launch.tools, bool(launch.skills))
        tools = ",".join(offered)
        argv = [str(binary.path), "-p"]
        if launch.one_shot:
            argv.append(launch.prompts[0])
        argv += ["--output-format", "stream-json", "--verbose"]
        if not launch.one_shot:
            argv += ["--input-format", "stream-json", "--replay-user-messages"]
        if launch.model is not None:
            argv += ["--model", launch.model["model"].split("/", 1)[-1]]
        argv += effort
        allowed = tools + (f",{CLAUDE_CODE_RUN_COMMAND}" if launch.command_tool else "")
        argv += ["--tools", tools, "--allowedTools", allowed.strip(",")]
        argv += ["--permission-mode", "dontAsk", "--setting-sources", "user", "--strict-mcp-config"]
        if launch.command_tool:
            argv += ["--mcp-config", json.dumps(mcp_config(), separators=(",", ":"))]
            offered.append(CLAUDE_CODE_RUN_COMMAND)
        mode = launch.environment.get("SKILL_EVAL_PROMPT_MODE", "isolated")
        argv += prompt_arguments(mode, offered, launch.environment, launch.cwd, home.root)
        argv += ["--settings", json.dumps(settings(launch.guard), separators=(",", ":"))]
        if launch.session_dir is not None:
            # runtime.session: Claude Code keeps its transcripts under `projects/` of its config
            # dir, which is the variant's session directory (redacted after the run).
            (home.config / "projects").symlink_to(launch.session_dir, target_is_directory=True)
        else:
            argv.append("--no-session-persistence")
        return argv

    def converse(self, talk: Talk) -> ClaudeCodeDialogue:
        """stream-json events pumped into the observation, with cancellation and the watchdog."""
        return ClaudeCodeDialogue(talk, self._skills)

    def cleanup(self, home: Home) -> None:
        """Claude Code keeps its state under HOME and TMPDIR, both deleted with the home."""
