"""opencode as a subject host: isolated XDG directories, a generated opencode.json, a process
per turn.

The operator's `~/.config/opencode`, `~/.claude`, `~/.agents`, AGENTS.md and CLAUDE.md files
(in the home or above the workspace) and opencode's built-in skill never reach it: HOME, the
four XDG directories and TMPDIR are ours, opencode.json is written for the run in the isolated
config directory (`config.py`), the workspace's own `.opencode` and the Claude Code and external
skill directories are switched off, and the declared skills, linked to their snapshots, are the
only ones in `$XDG_CONFIG_HOME/opencode/skills`, so nothing is added to the workspace. Its
session title is given on the command line, so opencode never asks the model for one, and its
dependency installer finds the config directories already satisfied (`quiet_installer`), so it
never reaches for a package registry.

Every prompt goes on stdin, never in argv: `opencode run` joins its message arguments and wraps
one holding a space in double quotes (escaping its own quotes), so a prompt in argv reached the
model changed; read from stdin, it reaches the model as written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...modelserver.wire import OPENAI
from .. import command_server, setup
from ..base import Command, Endpoint, Executable, Home, Launch, Talk
from ..context import declared_context_block, load_context
from ..registry import Registered
from .config import (
    OpencodeConfig,
    command_server_entry,
    live_provider_model,
    names,
)
from .dialogue import OpencodeDialogue
from .environment import no_models, switches
from .registration import OPENCODE, PINNED

COMMAND_SERVER = Path(command_server.__file__)
TITLE = "skill-eval"
ISOLATED_PROMPT = (
    "You are a coding assistant operating inside opencode for a skill evaluation. Work only in "
    "the current working directory and with the skills listed to you. When a task matches a "
    "skill's description, load it with the skill tool before acting, and resolve relative "
    "paths in a skill against that skill's directory. Be concise in your responses.\n"
)
INSTALLED_PLUGIN = "@opencode-ai/plugin"


def install_skills(config: Path, skills: Sequence[Path]) -> dict[str, str]:
    """Link each declared skill into `$XDG_CONFIG_HOME/opencode/skills`.

    Returns each skill's name, and every path its SKILL.md is known by, → the snapshot path its
    reads are recorded under."""
    names = setup.install_skills(config, skills, OPENCODE.display_name)
    known = {name: str(snapshot) for name, snapshot in names.items()}
    return known | setup.link_paths(config, skills, names)


def quiet_installer(directory: Path) -> None:
    """Make `directory` one whose dependencies opencode's installer considers installed.

    opencode 1.18.33 adds its plugin package to every config directory it reads, in the
    background, from the package registry; it skips a directory whose `node_modules` exists and
    whose lock file already lists every dependency, as this one then does."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "node_modules").mkdir(exist_ok=True)
    dependencies = {INSTALLED_PLUGIN: PINNED}
    manifest = {"private": True, "dependencies": dependencies}
    lock = {"lockfileVersion": 3, "packages": {"": {"dependencies": dependencies}}}
    (directory / "package.json").write_text(json.dumps(manifest) + "\n", encoding="utf-8")
    (directory / "package-lock.json").write_text(json.dumps(lock) + "\n", encoding="utf-8")


def system_prompt(launch: Launch) -> str | None:
    """The agent prompt of isolated mode (None in host mode: opencode's own stays)."""
    if launch.environment.get("SKILL_EVAL_PROMPT_MODE", "isolated") != "isolated":
        return None
    return ISOLATED_PROMPT


def allowed_roots(launch: Launch) -> tuple[str, ...]:
    """The workspace, the declared resources and the skills' snapshots: every path outside
    them is refused (opencode's `external_directory` permission)."""
    declared = json.loads(launch.environment.get("SKILL_EVAL_ALLOWED_ROOTS") or "[]")
    roots = [str(launch.cwd), *(p for p in declared if isinstance(p, str))]
    roots += [str(skill.resolve()) for skill in launch.skills]
    return names(roots)


class OpencodeHost:
    """The opencode CLI (`opencode-ai`'s native build, pinned)."""

    registration = Registered(OPENCODE.name)

    def __init__(self) -> None:
        self._base_url: str | None = None
        self._prices: Mapping[str, float] | None = None
        self._skills: dict[str, str] = {}
        self._command = "opencode"
        self._model: str | None = None
        self._models: Path | None = None

    def prepare(self, root: Path, endpoint: Endpoint) -> Home:
        """HOME, the four XDG directories and TMPDIR under `root`; nothing of the operator's."""
        config = root / "home" / ".config" / "opencode"
        home = setup.make_home(root, config, *setup.xdg_dirs(root / "home").values())
        for directory in (home.config, home.home / ".opencode"):
            quiet_installer(directory)
        if endpoint.served is not None:
            self._base_url = endpoint.served.route.base_url(OPENAI)
            self._prices = endpoint.served.cost
            self._models = no_models(home.root)
        return home

    def environment(self, home: Home) -> dict[str, str]:
        """Operator PATH and locale, our home and XDG dirs, no traffic beside the model's."""
        env = setup.isolated_environment(home) | switches(self._models)
        env |= {name: str(path) for name, path in setup.xdg_dirs(home.home).items()}
        return env

    def command(self, binary: Executable, launch: Launch, home: Home) -> Command:
        """Writes the run's opencode.json and skills; turn one's command line and the isolated
        environment (neither depends on the other). Its prompt goes on stdin (see the module)."""
        return Command(self.argv(binary, launch, home), self.environment(home))

    def argv(self, binary: Executable, launch: Launch, home: Home) -> list[str]:
        """Writes the run's opencode.json and skills; the command line of turn one."""
        self._skills = install_skills(home.config, launch.skills)
        entries = load_context(launch.environment.get("SKILL_EVAL_CONTEXT_MANIFEST", ""))
        instructions: tuple[str, ...] = ()
        if entries:
            context = home.root / "declared-context.md"
            context.write_text(declared_context_block(entries) + "\n", encoding="utf-8")
            instructions = (str(context),)
        server = None
        if launch.command_tool:
            declared = json.loads(launch.environment.get("SKILL_EVAL_COMMANDS") or "[]")
            longest = max(
                (c.get("timeout_ms") or command_server.DEFAULT_TIMEOUT_MS for c in declared),
                default=command_server.DEFAULT_TIMEOUT_MS,
            )
            timeout_ms = int(longest + command_server.KILL_GRACE_S * 1000 + 30_000)
            python = str(Path(sys.executable).resolve())
            server = command_server_entry(python, str(COMMAND_SERVER), {}, timeout_ms)
        served = self._base_url is not None
        # Served: the declared model's id under the loopback provider (what a recording asks
        # the upstream for); live: opencode's own provider table answers `--model`.
        model = live_provider_model(launch.model)
        config = OpencodeConfig(
            base_url=self._base_url,
            model=model,
            tools=tuple(launch.tools),
            skills=tuple(n for n in self._skills if "/" not in n),
            allowed_roots=allowed_roots(launch),
            prices=self._prices,
            instructions=instructions,
            prompt=system_prompt(launch),
            command_server=server,
        )
        (home.config / "opencode.json").write_text(config.json(), encoding="utf-8")
        self._command = str(binary.path)
        self._model = None if served or launch.model is None else launch.model["model"]
        return self._argv()

    def _argv(self, *more: str) -> list[str]:
        argv = [self._command, "run", "--pure", "--format", "json", "--title", TITLE, *more]
        argv += ["--print-logs", "--log-level", "WARN"]  # its warnings into stderr.log
        if self._model is not None:
            argv += ["--model", self._model]
        return argv

    def resume_argv(self, session: str) -> list[str]:
        """The command line of a later turn: the same session (its prompt goes on stdin)."""
        return self._argv("--session", session)

    def converse(self, talk: Talk) -> OpencodeDialogue:
        """`--format json` events pumped into the observation, a process per turn."""
        dialogue = OpencodeDialogue(talk, self, self._skills)
        # opencode has no way to hand a skill over explicitly that its events would confirm.
        dialogue.observation.delivery_unavailable(talk.launch.target)
        return dialogue

    def cleanup(self, home: Home) -> None:
        """opencode keeps its state under HOME, the XDG dirs and TMPDIR, all inside the home."""
