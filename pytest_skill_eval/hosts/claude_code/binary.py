"""Finding the Claude Code binary, checking once that it is the pinned version, and its
system-wide layers.

The knobs the host relies on (environment names, flags, event shapes) are version-specific and
partly undocumented, so any other version is refused rather than trusted. Whatever HOME,
`CLAUDE_CONFIG_DIR` and `--setting-sources` say, Claude Code also reads an administrator's
managed layers from a fixed directory; where one exists no subject starts (`hosts.layers`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..binaries import CheckedBinary, locate_for, pinned, version_of
from ..environment import baseline_environment
from .registration import CLAUDE_CODE

if TYPE_CHECKING:
    from ..options import HostOptions


@dataclass(frozen=True, slots=True)
class ClaudeCodeBinary(CheckedBinary):
    """A checked Claude Code executable."""


def check_claude(path: Path) -> ClaudeCodeBinary:
    """Run `claude --version` once in an empty home; refuse anything but the pinned version."""
    env = baseline_environment()
    env |= {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "HOME": os.devnull}
    found = version_of(path, env, CLAUDE_CODE).group(0)
    return ClaudeCodeBinary(path, pinned(CLAUDE_CODE, path, found))


from_handover = ClaudeCodeBinary.from_handover


def checked(options: HostOptions, root: Path) -> ClaudeCodeBinary:
    """`--skill-eval-claude`, else `claude` on PATH, else node_modules; the pinned version."""
    return check_claude(locate_for(CLAUDE_CODE, options.binary, root, options.rootdir))
