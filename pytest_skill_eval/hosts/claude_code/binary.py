"""Finding the Claude Code binary and checking, once, that it is the pinned version.

The knobs the host relies on (environment names, flags, event shapes) are version-specific and
partly undocumented, so any other version is refused rather than trusted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...errors import HostError
from ..binaries import locate, version_of

PINNED = "2.1.332"
PACKAGE = "@anthropic-ai/claude-code"
BASELINE_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
INSTALL = f"`npm install {PACKAGE}@{PINNED}`"


class ClaudeCodeNotFoundError(HostError):
    """The Claude Code binary is missing or not the pinned version."""


@dataclass(frozen=True, slots=True)
class ClaudeCodeBinary:
    """A checked Claude Code executable."""

    path: Path
    version: str


def locate_claude(explicit: str | None, root: Path) -> Path:
    """`--skill-eval-claude`, else `claude` on PATH, else `node_modules/.bin/claude`."""
    return locate(
        "claude", "--skill-eval-claude", explicit, root, host="Claude Code", install=INSTALL,
        error=ClaudeCodeNotFoundError,
    )  # fmt: skip


def check_claude(path: Path) -> ClaudeCodeBinary:
    """Run `claude --version` once in an empty home; refuse anything but the pinned version."""
    env = {k: os.environ[k] for k in BASELINE_KEYS if k in os.environ}
    env |= {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "HOME": os.devnull}
    found = version_of(path, env, ClaudeCodeNotFoundError).group(0)
    if found != PINNED:
        raise ClaudeCodeNotFoundError(
            f"{path} is Claude Code {found}; pytest-skill-eval supports exactly {PINNED}: {INSTALL}"
        )
    return ClaudeCodeBinary(path, found)
