"""Finding the Claude Code binary and checking, once, that it is the pinned version.

The knobs the host relies on (environment names, flags, event shapes) are version-specific and
partly undocumented, so any other version is refused rather than trusted.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ...errors import HostError

PINNED = "2.1.332"
PACKAGE = "@anthropic-ai/claude-code"
PACKAGE_ROOT = Path(__file__).resolve().parents[3]
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
    if explicit:
        candidate = Path(explicit).expanduser()
        found = shutil.which(str(candidate)) if not candidate.is_absolute() else str(candidate)
        if found and Path(found).is_file():
            return Path(found).resolve()
        raise ClaudeCodeNotFoundError(
            f"--skill-eval-claude {explicit}: no such executable; install Claude Code with "
            f"{INSTALL} or point the option at it"
        )
    on_path = shutil.which("claude")
    if on_path:
        return Path(on_path).resolve()
    for base in (root, PACKAGE_ROOT):
        local = base / "node_modules" / ".bin" / "claude"
        if local.is_file():
            return local.resolve()
    raise ClaudeCodeNotFoundError(
        f"Claude Code was not found: install it with {INSTALL} in the definition root, "
        "put `claude` on PATH, or pass --skill-eval-claude PATH"
    )


def check_claude(path: Path) -> ClaudeCodeBinary:
    """Run `claude --version` once in an empty home; refuse anything but the pinned version."""
    env = {k: os.environ[k] for k in BASELINE_KEYS if k in os.environ}
    env |= {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
    try:
        done = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env | {"HOME": os.devnull},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ClaudeCodeNotFoundError(f"{path} --version failed: {error}") from error
    match = re.search(r"(\d+\.\d+\.\d+)", done.stdout + done.stderr)
    if done.returncode != 0 or match is None:
        raise ClaudeCodeNotFoundError(
            f"{path} --version did not print a version (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[:200]}"
        )
    if match.group(1) != PINNED:
        raise ClaudeCodeNotFoundError(
            f"{path} is Claude Code {match.group(1)}; pytest-skill-eval supports exactly "
            f"{PINNED}: {INSTALL}"
        )
    return ClaudeCodeBinary(path, match.group(1))
