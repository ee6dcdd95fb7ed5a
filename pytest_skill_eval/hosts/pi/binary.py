"""Finding the Pi binary, checking its version once, and building its argv and environment."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import HostError
from ..binaries import locate, version_of
from ..environment import BASELINE_KEYS, OwnedEnvironment, baseline_environment
from ..layers import SystemLayer

if TYPE_CHECKING:
    from .. import HostOptions


MIN_VERSION = (0, 73, 1)
PINNED = "0.73.1"
# Pi 0.73.1 reads nothing system-wide: no /etc file, no managed layer. What it reads outside its
# agent dir is HOME's (`~/.pi`, `~/.agents/skills`: an empty home) and the folders above the
# workspace (`AGENTS.md`/`CLAUDE.md`, `.agents/skills`), which `--no-context-files` and
# `--no-skills` turn off (`pi_argv`).
SYSTEM_LAYERS: tuple[SystemLayer, ...] = ()

# The small host baseline copied from the operator's environment (PRODUCT §4): enough for Node
# to start and format text, nothing that carries identity or credentials.
# Pi's isolation (`hosts.environment`): every name `base_environment` sets, and PI_*, which
# steer its agent dir, package dir, network and telemetry.
OWNED_ENVIRONMENT = OwnedEnvironment.of(BASELINE_KEYS, prefixes=("PI_",))


class PiNotFoundError(HostError):
    """The Pi binary is missing or too old."""


@dataclass(frozen=True, slots=True)
class PiBinary:
    """A checked Pi executable."""

    path: Path
    version: str


def locate_pi(explicit: str | None, root: Path) -> Path:
    """`--skill-eval-pi`, else `pi` on PATH, else `node_modules/.bin/pi` (root, then package)."""
    install = f"`npm install @mariozechner/pi-coding-agent@{PINNED}`"
    return locate(
        "pi", "--skill-eval-pi", explicit, root, host="Pi", install=install, error=PiNotFoundError
    )


def check_pi(path: Path) -> PiBinary:
    """Run `pi --version` once; refuse a Pi older than the supported version."""
    env = baseline_environment()
    env |= {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
    match = version_of(path, env, PiNotFoundError)
    version = tuple(int(g) for g in match.groups())
    if version < MIN_VERSION:
        raise PiNotFoundError(
            f"{path} is Pi {match.group(0)}; pytest-skill-eval needs {PINNED} or newer: "
            f"`npm install @mariozechner/pi-coding-agent@{PINNED}`"
        )
    return PiBinary(path, match.group(0))


def base_environment(home: Path, agent_dir: Path, tmp: Path) -> dict[str, str]:
    """The isolated baseline: operator PATH/locale, our own HOME, agent dir and TMPDIR."""
    env = baseline_environment()
    env.setdefault("PATH", os.defpath)
    env |= {
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "TMPDIR": str(tmp),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }
    return env


def pi_argv(
    pi: Path,
    *,
    mode: str,
    session_dir: Path | None,
    extensions: Sequence[Path],
    tools: Sequence[str],
    skills: Sequence[Path],
    model: Mapping[str, str] | None,
    prompt: str | None,
) -> list[str]:
    """Pi's argv, in the reference order (§4.2), minus flags Pi 0.73.1 does not have."""
    argv = [str(pi), "--mode", mode]
    if mode == "json":
        argv.append("-p")
    argv += ["--session-dir", str(session_dir)] if session_dir else ["--no-session"]
    argv.append("--no-extensions")
    for extension in extensions:
        argv += ["--extension", str(extension)]
    argv += ["--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files"]
    argv += ["--tools", ",".join(tools)] if tools else ["--no-tools"]
    for skill in skills:
        argv += ["--skill", str(skill)]
    if model is not None:
        argv += ["--model", model["model"]]
        if model.get("thinking"):
            argv += ["--thinking", model["thinking"]]
    if prompt is not None:
        argv.append(prompt)
    return argv


def checked(options: HostOptions, root: Path) -> PiBinary:
    """Pi's binary, located (`--skill-eval-pi`, PATH, node_modules) and version-checked."""
    return check_pi(locate_pi(options.binary, root))
