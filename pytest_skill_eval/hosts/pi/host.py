"""Pi as a subject host: agent dir, settings.json and models.json, extensions, json vs rpc."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...evidence import layout
from ..base import Command, Endpoint, Executable, Home, Launch, Talk
from ..observation import Observation
from ..process import HostProcess, ProcessOutcome
from ..registry import Registered
from ..setup import make_home
from . import extensions
from .binary import PiBinary, base_environment, pi_argv
from .config import PiModels, PiSettings, live_settings_json, pi_agent_files, settings_json
from .driver import Conversation, run_one_shot, run_turns
from .registration import PI


def agent_files(endpoint: Endpoint) -> dict[str, PiSettings | PiModels | dict[str, object]]:
    """`settings.json` and `models.json` (when there is one) for the agent directory."""
    served = endpoint.served
    if served is None:
        files: dict[str, PiSettings | PiModels | dict[str, object]] = {
            "settings.json": live_settings_json()
        }
        if endpoint.live_models is not None:
            files["models.json"] = endpoint.live_models
        return files
    return {
        "settings.json": settings_json(served.provider, served.model_id),
        "models.json": pi_agent_files(
            served.route,
            api=served.api,
            provider=served.provider,
            model_id=served.model_id,
            cost=served.cost,
        ),
    }


class PiDialogue:
    """`--mode json` (prompt in argv) or `--mode rpc` (prompts sent turn by turn)."""

    def __init__(self, talk: Talk) -> None:
        self.conversation = Conversation(talk.process, talk.cancel)
        self._launch = talk.launch
        self._after_turn = talk.after_turn

    @property
    def process(self) -> HostProcess:
        """Pi runs as one process for the whole conversation."""
        return self.conversation.process

    @property
    def observation(self) -> Observation:
        """What was observed so far."""
        return self.conversation.observation

    @property
    def outcome(self) -> ProcessOutcome:
        """How Pi is ending."""
        return self.conversation.outcome

    def run(self) -> tuple[Observation, ProcessOutcome]:
        """One shot, or every prompt in turn (the target skill delivered on turn one)."""
        launch = self._launch
        if launch.one_shot:
            return run_one_shot(self.conversation, launch.prompts[0])
        return run_turns(
            self.conversation,
            launch.prompts,
            target=launch.target,
            turn_file=launch.turn_file,
            after_turn=self._after_turn,
            gate=launch.gate,
        )


def skill_loader(binary: Executable) -> Path | None:
    """Pi's skill loader, which `--skill` goes through: the bundle's own when Pi runs as its
    bundle (the module the running CLI already loaded), else `dist/core/skills.js` beside its
    CLI; None when the binary is no installed Pi package."""
    bundled = binary.bundle if isinstance(binary, PiBinary) else None
    stock = Path(os.path.realpath(binary.path)).parent / "core" / "skills.js"
    for loader in (bundled.skill_loader if bundled else None, stock):
        if loader is not None and loader.is_file():
            return loader
    return None


class PiHost:
    """The Pi coding agent CLI (`@mariozechner/pi-coding-agent`)."""

    registration = Registered(PI.name)

    def prepare(self, root: Path, endpoint: Endpoint) -> Home:
        """HOME, agent dir and TMPDIR under `root`; the agent dir gets Pi's config files."""
        home = make_home(root, root / "agent")
        for name, content in agent_files(endpoint).items():
            (home.config / name).write_text(json.dumps(content, indent=2), encoding="utf-8")
        if endpoint.auth_json is not None:
            (home.config / "auth.json").write_bytes(endpoint.auth_json)
            (home.config / "auth.json").chmod(0o600)
        return home

    def command(self, binary: Executable, launch: Launch, home: Home) -> Command:
        """Pi's argv; operator PATH and locale, our HOME, agent dir and TMPDIR, Pi offline;
        with skills, where Pi's skill loader is and where its warnings go."""
        env = base_environment(home.home, home.config, home.tmp)
        loader = skill_loader(binary) if launch.skills else None
        if loader is not None:
            env["SKILL_EVAL_PI_SKILL_LOADER"] = str(loader)
            env["SKILL_EVAL_SKILL_WARNINGS_PATH"] = str(home.root / layout.SKILL_WARNINGS)
        return Command(self._argv(binary, launch, warnings=loader is not None), env)

    @staticmethod
    def _argv(binary: Executable, launch: Launch, *, warnings: bool = False) -> list[str]:
        """Guard first, then the skill warnings, the commands tool, the variant's bundles, the
        observer last."""
        loaded: list[Path] = [extensions.GUARD] if launch.guard else []
        if warnings:
            loaded.append(extensions.SKILL_WARNINGS)
        if launch.command_tool:
            loaded.append(extensions.COMMAND_TOOL)
        loaded += list(launch.plugins)
        if launch.observe_context:
            loaded.append(extensions.OBSERVER)
        command = binary.command() if isinstance(binary, PiBinary) else [str(binary.path)]
        return pi_argv(
            command,
            mode="json" if launch.one_shot else "rpc",
            session_dir=launch.session_dir,
            extensions=loaded,
            tools=launch.tools,
            skills=launch.skills,
            model=launch.model,
            prompt=launch.prompts[0] if launch.one_shot else None,
        )

    def converse(self, talk: Talk) -> PiDialogue:
        """Pi's frames pumped into the observation, with cancellation and the watchdog."""
        return PiDialogue(talk)

    def cleanup(self, home: Home) -> None:
        """Pi leaves nothing outside its home."""
