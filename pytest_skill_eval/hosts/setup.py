"""The set-up the hosts share: a host's isolated home and its XDG directories, the declared
skills linked into its skills directory, and the environment it starts from.

Each host says only what is its own (where its config directory lives, which skill names it
reserves, the variables it adds); making the directories, checking and linking the skills and
taking the operator's PATH and locale happen here, once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .base import Home
from .dialect import skill_name
from .environment import baseline_environment

# Names no skill may take in any host's skills directory: they are not a single directory entry.
UNINSTALLABLE = ("", ".", "..")


def make_home(root: Path, config: Path, *more: Path) -> Home:
    """HOME (`root/home`), TMPDIR (`root/tmp`) and the host's `config` directory under `root`,
    made fresh; `more` directories are made as well, with their parents."""
    home = Home(root=root, home=root / "home", tmp=root / "tmp", config=config)
    home.home.mkdir(parents=True)  # `root` too, when the caller has not made it
    home.config.mkdir(parents=True)  # Pi's `agent`, `home/.claude`, `home/.config/opencode`
    home.tmp.mkdir()
    for directory in more:
        directory.mkdir(parents=True, exist_ok=True)
    return home


def xdg_dirs(home: Path) -> dict[str, Path]:
    """The four XDG base directories, inside the isolated `home`."""
    return {
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_STATE_HOME": home / ".local" / "state",
    }


def install_skills(
    config: Path, skills: Sequence[Path], host: str, reserved: Iterable[str] = ()
) -> dict[str, Path]:
    """Link each declared skill into `config/skills`, linked to its snapshot; name → its
    snapshotted SKILL.md. ValueError for a name that is taken twice, is not one directory
    entry, or is `reserved` by the host (its bundled skills)."""
    refused = (*UNINSTALLABLE, *reserved)
    directory = config / "skills"
    directory.mkdir(exist_ok=True)
    seen: dict[str, Path] = {}
    for skill in skills:
        name = skill_name(skill)
        if name in seen or "/" in name or name in refused:
            raise ValueError(f"skill {skill} cannot be installed for {host} as {name!r}")
        (directory / name).symlink_to(skill, target_is_directory=True)
        seen[name] = (skill / "SKILL.md").resolve()
    return seen


def link_paths(
    config: Path, skills: Sequence[Path], installed: Mapping[str, Path]
) -> dict[str, str]:
    """The paths each installed SKILL.md is also known by (through the skills directory and
    through the declared skill) → the snapshot path its reads are recorded under."""
    known: dict[str, str] = {}
    for skill, (name, snapshot) in zip(skills, installed.items(), strict=True):
        for path in (config / "skills" / name / "SKILL.md", skill / "SKILL.md"):
            known[str(path)] = str(snapshot)
    return known


def isolated_environment(home: Home, **variables: str) -> dict[str, str]:
    """The operator's PATH (the default one when unset) and locale, HOME and TMPDIR ours, and
    the host's own `variables`."""
    env = baseline_environment()
    env.setdefault("PATH", os.defpath)
    env |= {"HOME": str(home.home), **variables, "TMPDIR": str(home.tmp)}
    return env
