"""Finding Gemini CLI, checking its version, and the layers it reads from outside its home.

The knobs the host relies on (settings keys, the stream-json events, the skills directory,
`activate_skill` under `--approval-mode yolo`) are version-specific, so any other version is
refused. Gemini CLI reads `/etc/gemini-cli` whatever HOME says: the system settings and system
defaults (which the launch also moves into the isolated home through
`GEMINI_CLI_SYSTEM_SETTINGS_PATH` and `GEMINI_CLI_SYSTEM_DEFAULTS_PATH`) and the system policies
beside them, which no variable moves. Where the directory exists no subject starts
(`hosts.layers`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..binaries import locate_for, pinned, version_of
from ..environment import baseline_environment
from ..runtime import NodeBinary, node_command, node_entry, node_runtime
from .registration import GEMINI_CLI

if TYPE_CHECKING:
    from ..options import HostOptions


def check_gemini(
    path: Path, node: str | None, root: Path, rootdir: Path | None = None
) -> NodeBinary:
    """Run `gemini --version` once, on the Node it will run on, in an empty home; refuse
    anything but the pinned version."""
    runtime = node_runtime(node, root, rootdir) if node_entry(path) is not None else None
    command = node_command(runtime, node_entry(path) if runtime else None, path)
    with tempfile.TemporaryDirectory(prefix="skill-eval-gemini-") as home:
        env = baseline_environment()
        env |= {"HOME": home, "GEMINI_CLI_HOME": home, "GEMINI_CLI_NO_RELAUNCH": "true"}
        found = version_of(path, env, GEMINI_CLI, command=command).group(0)
    return NodeBinary.of(path, pinned(GEMINI_CLI, path, found), node, root, rootdir)


from_handover = NodeBinary.from_handover


def checked(options: HostOptions, root: Path) -> NodeBinary:
    """The pinned Gemini CLI, located and version-checked, on the pinned Node (or
    `--skill-eval-node`)."""
    path = locate_for(GEMINI_CLI, options.binary, root, options.rootdir)
    return check_gemini(path, options.node, root, options.rootdir)
