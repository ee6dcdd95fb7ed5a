"""Gemini CLI as a subject host: an isolated `~/.gemini`, a process per turn, `--resume`.

The operator's `~/.gemini`, `.env` files, GEMINI.md files above the workspace, the system
settings and the bundled skills never reach it: HOME (and `GEMINI_CLI_HOME`) and TMPDIR are
ours, `settings.json` is written for the run (`config.py`), the system settings paths point at
files that never exist, `/etc/gemini-cli` must not exist (`binary.SYSTEM_LAYERS`), and the
declared skills, linked to their snapshots, are the only ones in `~/.gemini/skills`, so nothing
is added to the workspace. `activate_skill` is offered only under `--approval-mode yolo`, which
approves every call: what may run is decided by `tools.core` (the declared tools only, never the
shell) and, with the guard, by the BeforeTool hook. Turn one is `gemini -p`; each later turn is
`gemini -p … --resume <session>` in a new process, started only while the workspace's own
layers (`registration.WORKSPACE_LAYERS`) are as they were before turn one, and without the
project registry's lock an earlier process left behind (`release_stale_lock`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from ...modelserver.gemini import GEMINI
from ...modelserver.scripted import DEFAULT_MODEL as SCRIPTED_MODEL
from ...modelserver.scripted import DEFAULT_PROVIDER as SCRIPTED_PROVIDER
from ..base import Command, Declared, Endpoint, Executable, Home, Launch, Talk
from ..context import declared_context_block, load_context
from ..dialogue import ProcessPerTurnDialogue
from ..layers import SystemLayerError
from ..observation import Observation
from ..process import ProcessOutcome
from ..registry import Registered
from ..setup import install_skills, isolated_environment, make_home
from .config import (
    DEFAULT_MODEL,
    LOOPBACK_KEY,
    command_server_entry,
    host_tools,
    isolated_prompt,
    settings,
)
from .events import StreamTranslator
from .registration import GEMINI_CLI, RUN_COMMAND

# What the launch sets for every run: no second Node process (the CLI otherwise relaunches
# itself with a larger heap), and the workspace trusted without a prompt.
QUIET = {"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true"}


def env_files_above(cwd: Path) -> list[Path]:
    """The `.gemini/.env` files in `cwd` and the directories above it: Gemini CLI loads the
    nearest one into its environment in a trusted workspace, whatever `ignoreLocalEnv` says."""
    found = [directory / ".gemini" / ".env" for directory in (cwd, *cwd.parents)]
    return [path for path in found if os.path.lexists(path)]


def gemini_model(launch: Launch) -> str:
    """The model Gemini CLI is asked for: the declared one, the scripted default a Gemini
    model name (the CLI picks its prompts by the name)."""
    if launch.model is None:
        return DEFAULT_MODEL
    provider, _, declared = launch.model["model"].rpartition("/")
    if not declared or (provider, declared) == (SCRIPTED_PROVIDER, SCRIPTED_MODEL):
        return DEFAULT_MODEL
    return declared


# Gemini CLI locks `~/.gemini/projects.json` as it starts (`proper-lockfile`: a directory beside
# it) and now and then exits with the lock still there. The next turn's process then backs off,
# doubling each wait, until the lock is 10 s old and past: 12.7 s, once 51 s, spent waiting.
REGISTRY_LOCK = Path(".gemini") / "projects.json.lock"


def release_stale_lock(gemini_home: Path) -> bool:
    """Remove the registry lock an exited Gemini CLI left in `gemini_home` (its
    `GEMINI_CLI_HOME`); True when one was there. Only the empty directory `proper-lockfile`
    makes is removed: a symlink or anything with contents is left as it is."""
    try:
        os.rmdir(gemini_home / REGISTRY_LOCK)  # never follows a symlink, never empties
    except OSError:
        return False
    return True


class GeminiDialogue(ProcessPerTurnDialogue[StreamTranslator, "GeminiCliHost"]):
    """stream-json events out; turn one in the first process, each later one `--resume`s."""

    def _translate(self) -> StreamTranslator:
        host, cwd = self._host, self._launch.cwd
        return StreamTranslator(self._observation, host.skills, cwd, host.prices)

    def run(self) -> tuple[Observation, ProcessOutcome]:
        """Every prompt in turn; Gemini CLI has no way to name a skill in a prompt."""
        launch, obs = self._launch, self._observation
        self._process.close_stdin()  # with stdin open, `-p` would wait to append it
        obs.delivery = {
            "kind": "natural-prompt" if launch.target is None else "unavailable",
            "turn": 1,
            "targetPath": str(launch.target) if launch.target else None,
        }
        if launch.target is not None:
            obs.delivery["reason"] = "Gemini CLI has no headless way to invoke a named skill"
        return self._turns(self._host.registration)

    def _later_argv(self, prompt: str) -> list[str] | None:
        session = self._translator.session_id
        return None if session is None else self._host.turn_argv(prompt, session)

    def _next_process(
        self, number: int, argv: list[str] | None, registration: Declared, stdin: str | None = None
    ) -> bool:
        """The next turn's process, in a home whose registry lock is released: the turn before
        has exited and no other process of this subject runs, so a lock there is stale."""
        release_stale_lock(Path(self._process.env["GEMINI_CLI_HOME"]))
        return super()._next_process(number, argv, registration, stdin)


class GeminiCliHost:
    """Google's Gemini CLI (`@google/gemini-cli`, pinned)."""

    registration = Registered(GEMINI_CLI.name)
    name = GEMINI_CLI.name
    display_name = GEMINI_CLI.display_name
    auth_advice = GEMINI_CLI.auth_advice
    runs_on_node = GEMINI_CLI.runs_on_node
    observes_context = GEMINI_CLI.observes_context
    system_layers = GEMINI_CLI.system_layers
    owned_environment = GEMINI_CLI.owned_environment
    unobservable_tools = GEMINI_CLI.unobservable

    def __init__(self) -> None:
        self._base_url: str | None = None
        self.prices: Mapping[str, float] | None = None  # the served model's, per million tokens
        self.skills: dict[str, Path] = {}
        self._command = ["gemini"]
        self._model = DEFAULT_MODEL
        self._system_md: Path | None = None

    def prepare(self, root: Path, endpoint: Endpoint) -> Home:
        """HOME, its `.gemini` and TMPDIR under `root`; nothing of the operator's."""
        home = make_home(root, root / "home" / ".gemini")
        if endpoint.served is not None:
            self._base_url = endpoint.served.route.base_url(GEMINI)
            self.prices = endpoint.served.cost
        return home

    def command(self, binary: Executable, launch: Launch, home: Home) -> Command:
        """Writes the run's settings, skills and prompt; the command line of turn one and its
        environment: operator PATH and locale, our home dirs and system settings, the loopback
        key; no operator credential."""
        argv = self._argv(binary, launch, home)
        return Command(argv, self._environment(home))

    def _environment(self, home: Home) -> dict[str, str]:
        env = isolated_environment(home, GEMINI_CLI_HOME=str(home.home))
        env |= {
            # Paths that never exist: no system settings or defaults file is read at all.
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(home.root / "no-system-settings.json"),
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(home.root / "no-system-defaults.json"),
            **QUIET,
        }
        if self._system_md is not None:
            env["GEMINI_SYSTEM_MD"] = str(self._system_md)
        if self._base_url is not None:
            env |= {"GOOGLE_GEMINI_BASE_URL": self._base_url, "GEMINI_API_KEY": LOOPBACK_KEY}
        return env

    def _argv(self, binary: Executable, launch: Launch, home: Home) -> list[str]:
        """SystemLayerError when an environment file above the workspace would reach the CLI."""
        planted = env_files_above(launch.cwd)
        if planted:
            raise SystemLayerError(
                f"Gemini CLI would load the environment file {planted[0]} above the workspace "
                "whatever its isolated home says; remove it (or keep the project outside that "
                "directory)"
            )
        self.skills = install_skills(home.config, launch.skills, GEMINI_CLI.display_name)
        offered = host_tools(launch.tools, bool(launch.skills))
        entries = load_context(launch.environment.get("SKILL_EVAL_CONTEXT_MANIFEST", ""))
        commands = command_server_entry(launch.cwd) if launch.command_tool else None
        if launch.command_tool:
            offered.append(RUN_COMMAND)
        allowed = json.loads(launch.environment.get("SKILL_EVAL_ALLOWED_ROOTS") or "[]")
        readable = [Path(p) for p in allowed if isinstance(p, str) and Path(p) != launch.cwd]
        config = settings(
            offered, launch.guard, commands, [*readable, *launch.skills], declared=self.skills
        )
        (home.config / "settings.json").write_text(json.dumps(config, indent=2), "utf-8")
        if launch.environment.get("SKILL_EVAL_PROMPT_MODE", "isolated") == "isolated":
            self._system_md = home.root / "system.md"
            self._system_md.write_text(isolated_prompt(offered, entries, launch.cwd), "utf-8")
        elif entries:
            # Gemini CLI's own prompt; the declared context is the (isolated) user memory.
            memory = declared_context_block(entries) + "\n"
            (home.config / "GEMINI.md").write_text(memory, encoding="utf-8")
        self._model = gemini_model(launch)
        command = getattr(binary, "command", None)  # `<node> <entry>` on the pinned runtime
        self._command = command() if callable(command) else [str(binary.path)]
        return self.turn_argv(launch.prompts[0], None)

    def turn_argv(self, prompt: str, session: str | None) -> list[str]:
        """The command line of one turn: the prompt, and the session to resume after turn one."""
        argv = [*self._command, "--output-format", "stream-json", "--approval-mode", "yolo"]
        argv += ["--skip-trust", "--model", self._model]
        if session is not None:
            argv += ["--resume", session]
        return [*argv, f"--prompt={prompt}"]  # one word: a prompt may begin with a dash

    def converse(self, talk: Talk) -> GeminiDialogue:
        """stream-json events pumped into the observation, with cancellation and the watchdog."""
        return GeminiDialogue(talk, self)

    def cleanup(self, home: Home) -> None:
        """Gemini CLI keeps its state under HOME and TMPDIR, both deleted with the home."""
