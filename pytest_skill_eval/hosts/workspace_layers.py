"""Workspace layers: configuration a host reads from inside the subject's own workspace.

A host that starts a new process for each turn (Gemini CLI) reads its workspace layers again as
each process starts, one that keeps its process (Codex's app-server) may read them again as a
turn begins, and the subject can write its workspace: a `.gemini/settings.json` it writes in
turn one would give turn two's process hooks and MCP servers that run as the operator, a shell,
or a telemetry endpoint. Each host declares the layers its own switches cannot turn off
(`HostRegistration.workspace_layers`); their state is taken before the first process starts,
and this one check compares it again before each later turn. A layer the subject
created, changed or removed stops the conversation there, with one line naming it. What the
group's own workspace held when it started is the group's, and stays allowed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import HostError

# A directory layer is listed down to this many entries; past it, only their count is kept.
MAX_ENTRIES = 2000
CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class WorkspaceLayer:
    """One file or directory, relative to the workspace, that a host reads as it starts."""

    path: str
    what: str


class WorkspaceLayerError(HostError):
    """The subject planted a layer its host would read as the next process starts."""


def _file_digest(path: str) -> str:
    """A regular file's sha256, opened without following a link or blocking on a FIFO."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as failure:
        return f"unreadable:{failure.errno}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "special"
        digest = hashlib.sha256()
        while chunk := os.read(fd, CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _entry(path: str) -> str | None:
    """What one entry is, and what it holds; None when nothing is there."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as failure:
        return f"unreadable:{failure.errno}"
    if stat.S_ISLNK(info.st_mode):
        return f"link:{os.readlink(path)}"
    if stat.S_ISREG(info.st_mode):
        return f"file:{_file_digest(path)}"
    if stat.S_ISDIR(info.st_mode):
        return "dir"
    return f"special:{stat.S_IFMT(info.st_mode)}"


def _state(path: Path) -> str | None:
    """A layer's state: its entry, and for a directory every entry below it (no link
    followed)."""
    top = _entry(str(path))
    if top != "dir":
        return top
    listed: list[str] = []
    for directory, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted([*dirs, *files]):
            full = os.path.join(directory, name)
            if len(listed) < MAX_ENTRIES:
                listed.append(f"{os.path.relpath(full, path)}={_entry(full)}")
            else:
                listed.append("")
    digest = hashlib.sha256("\n".join(listed).encode("utf-8", "surrogateescape"))
    return f"dir:{len(listed)}:{digest.hexdigest()}"


def layer_state(cwd: Path, layers: Iterable[WorkspaceLayer]) -> dict[str, str | None]:
    """Each layer's state in the workspace `cwd`, by its relative path (None: absent)."""
    return {layer.path: _state(cwd / layer.path) for layer in layers}


def _change(before: str | None, now: str | None) -> str:
    if before is None:
        return "created"
    return "removed" if now is None else "changed"


def unchanged(
    host: str,
    cwd: Path,
    layers: Sequence[WorkspaceLayer],
    before: Mapping[str, str | None],
    number: int,
) -> None:
    """WorkspaceLayerError naming each layer that is not as it was before turn one, when turn
    `number`'s process is about to start."""
    now = layer_state(cwd, layers)
    moved = [layer for layer in layers if now[layer.path] != before.get(layer.path)]
    if moved:
        named = ", ".join(
            f"{cwd / layer.path} ({layer.what}; {_change(before.get(layer.path), now[layer.path])})"
            for layer in moved
        )
        raise WorkspaceLayerError(
            f"{host} would read configuration the subject planted in its workspace: {named}; "
            f"turn {number} was not started"
        )
