"""Changed files of a run and their unified diffs against the group's fixture snapshot.

Only plain relative paths inside their directory are read; symlinks, directories, binary and
oversized files get a note instead of a diff. The result is data; the report template shows it.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .present import changes_of, escape_cell

DIFF_LINES = 400
DIFF_MAX_BYTES = 2 * 1024 * 1024
CHANGE_KINDS = ("created", "modified", "deleted")


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a file diff: its text, or why there is none."""

    text: str | None
    note: str | None
    size: int | None = None

    def describe(self) -> str:
        """What this side is, for the note shown when there is no text diff."""
        return f"text ({self.size} bytes)" if self.text is not None else str(self.note)


@dataclass(frozen=True, slots=True)
class FileChange:
    """One changed file: its name on one line, and either a note or its diff lines.

    `diff` holds (css class or None, line text with its LF) pairs; `note` is set when either
    side has no text to compare.
    """

    kind: str
    name: str
    note: str | None
    diff: list[tuple[str | None, str]]
    added: int
    removed: int

    @property
    def shown(self) -> list[tuple[str | None, str]]:
        """The diff lines shown before the whole diff has to be asked for."""
        return self.diff[:DIFF_LINES]

    @property
    def clipped(self) -> bool:
        """Whether the diff is longer than what is shown at first."""
        return len(self.diff) > DIFF_LINES


def split_lines(text: str) -> list[str]:
    """Lines with their LF kept (CR stays part of the line: it is content, and is shown)."""
    parts = text.split("\n")
    found = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        found.append(parts[-1])
    return found


def read_side(root: Path, rel: str) -> Side:
    """The text of `rel` below `root`, or a note saying why it cannot be diffed."""
    try:
        return _read_side(root, rel)
    except OSError as error:  # a name longer than PATH_MAX, a symlink loop above it
        return Side(None, f"not shown: unreadable ({error.strerror or error})")


def _read_side(root: Path, rel: str) -> Side:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return Side(None, "not shown: the recorded path is not a plain relative path")
    path = root.joinpath(*parts)
    if path.is_symlink():
        return Side(None, f"symlink to {os.readlink(path)}")
    if not path.exists():
        return Side(None, "absent")
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
        return Side(None, "not shown: the path leaves its directory")
    if path.is_dir():
        return Side(None, "a directory")
    if not path.is_file():
        return Side(None, "not shown: a FIFO, socket or device (never opened)")
    size = path.stat().st_size
    if size > DIFF_MAX_BYTES:
        return Side(None, f"too large to diff ({size} bytes)", size)
    data = path.read_bytes()
    if b"\0" in data:
        return Side(None, f"binary file ({size} bytes)", size)
    try:
        return Side(data.decode("utf-8"), None, size)
    except UnicodeDecodeError:
        return Side(None, f"binary file ({size} bytes)", size)


def changed_files(group_dir: Path, variant: str, run: Mapping[str, Any]) -> list[FileChange] | None:
    """Every file the run changed, in kind order; None when the run records no effects."""
    if not isinstance(run.get("effects"), Mapping):
        return None
    changes = changes_of(run)
    fixture = group_dir / "resources" / "fixture"
    workspace = group_dir / variant / "workspace"
    found = []
    for kind in CHANGE_KINDS:
        for rel in changes[kind]:
            before = read_side(fixture, rel) if kind != "created" else Side("", None, 0)
            after = read_side(workspace, rel) if kind != "deleted" else Side("", None, 0)
            found.append(file_change(kind, rel, before, after))
    return found


def file_change(kind: str, rel: str, before: Side, after: Side) -> FileChange:
    """The note or the unified diff of one changed file."""
    # A file name may hold TAB, CR or LF; show it the way the text view does, on one line.
    name = escape_cell(rel)
    if before.text is None or after.text is None:
        notes = []
        if kind != "created":
            notes.append(f"fixture: {before.describe()}")
        if kind != "deleted":
            notes.append(f"workspace: {after.describe()}")
        return FileChange(kind, name, "; ".join(notes), [], 0, 0)
    diff = list(
        difflib.unified_diff(
            split_lines(before.text),
            split_lines(after.text),
            fromfile=f"fixture/{name}" if kind != "created" else "/dev/null",
            tofile=f"workspace/{name}" if kind != "deleted" else "/dev/null",
        )
    )
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return FileChange(kind, name, None, [_diff_line(line) for line in diff], added, removed)


def _diff_line(line: str) -> tuple[str | None, str]:
    text = line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
    if line.startswith(("+++", "---")):
        return "hdr", text
    if line.startswith("@@"):
        return "hunk", text
    if line.startswith("+"):
        return "add", text
    if line.startswith("-"):
        return "del", text
    return None, text
