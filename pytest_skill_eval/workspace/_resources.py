"""Snapshots of declared resources, the context manifest and per-turn workspace snapshots."""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..evidence.inputs import ContextEntry, ContextFile, ContextManifest, SnapshotRecord
from ..evidence.observed import TurnWorkspace
from . import _tree
from ._changes import (
    changes,
    describe_differences,
)
from ._entry import (
    Fingerprint,
    fingerprint_digest,
    fingerprint_json,
    inside,
)
from ._git import ResolvedSource, materialise_git
from ._tree import (
    ResourceError,
    fingerprint,
)

ResourceKind = Literal["skill", "context", "fixture", "bundle"]
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class ResourceSnapshot:
    """An immutable copy of one declared resource and the fingerprint it had when taken."""

    declared_path: str
    source_path: str
    path: Path
    files: Fingerprint

    def to_json(self) -> SnapshotRecord:
        """The evidence form."""
        return {
            "declaredPath": self.declared_path,
            "sourcePath": self.source_path,
            "path": str(self.path),
            "files": fingerprint_json(self.files),
            "sha256": fingerprint_digest(self.files),
        }


def snapshot_resource(
    root: Path,
    source: ResolvedSource,
    declared_path: str,
    destination: Path,
    kind: ResourceKind,
) -> ResourceSnapshot:
    """Snapshot `declared_path` (relative to the root) from `source` into `destination`."""
    label = f"declared {kind} {declared_path}"
    if source.kind == "git":
        source_path, single = materialise_git(source, declared_path, destination, kind)
        snapshot = Path(os.path.realpath(destination))
        files = fingerprint(snapshot, label=label)
    else:
        source_path, single, files = _snapshot_working_tree(root, declared_path, destination, kind)
        snapshot = Path(os.path.realpath(destination))
    result = ResourceSnapshot(declared_path, source_path, snapshot, files)
    if kind == "skill":
        skill = os.path.realpath(snapshot / "SKILL.md")
        if not inside(skill, str(snapshot)) or not os.path.isfile(skill):
            raise ResourceError(
                f"declared skill has no contained SKILL.md: {declared_path} "
                "(add a SKILL.md file at the top of the skill directory)"
            )
    elif kind == "context":
        _context_texts(result, single)
    return result


def _snapshot_working_tree(
    root: Path, declared: str, destination: Path, kind: ResourceKind
) -> tuple[str, bool, Fingerprint]:
    canonical_root = os.path.realpath(root)
    try:
        real = os.path.realpath(Path(canonical_root) / declared, strict=True)
    except OSError:
        real = ""
    if os.path.isabs(declared) or not real or not inside(real, canonical_root):
        raise ResourceError(
            f"declared {kind} is missing or escapes the definition root: {declared} "
            f"(root {canonical_root})"
        )
    if os.path.isdir(real):
        return real, False, _tree.snapshot_tree(Path(real), destination, f"{kind} {declared}")
    if kind == "context" and os.path.isfile(real):
        name = posixpath.basename(posixpath.normpath(declared.replace(os.sep, "/")))
        if name in ("", ".", ".."):
            name = os.path.basename(real)
        files = _tree.snapshot_file(Path(real), destination, name, f"{kind} {declared}")
        return real, True, files
    if os.path.isfile(real):
        raise ResourceError(
            f"declared {kind} must be a directory, not a file: {declared} "
            "(declare the directory that contains it)"
        )
    raise ResourceError(
        f"declared {kind} is not a regular file or directory: {declared} "
        "(FIFOs, sockets and devices cannot be snapshotted)"
    )


def _context_texts(snapshot: ResourceSnapshot, single: bool) -> list[tuple[str, str, str]]:
    """(absolute path, sha256 of bytes, decoded text) for every file entry of a context snapshot."""
    base = str(snapshot.path)
    recorded = {e.path: e.sha256 for e in snapshot.files if e.type == "file"}
    texts = []
    for entry in snapshot.files:
        if entry.type == "directory":
            continue
        shown = snapshot.declared_path if single else f"{snapshot.declared_path}/{entry.path}"
        path = os.path.join(base, *entry.path.split("/"))
        real = os.path.realpath(path)
        if not inside(real, base) or not os.path.isfile(real):
            raise ResourceError(f"declared context entry is not a contained file: {shown}")
        data = Path(real).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if entry.path in recorded and recorded[entry.path] != digest:
            raise ResourceError(f"declared context changed after it was snapshotted: {shown}")
        try:
            # The hash covers the bytes (BOM included); the text is what a reader sees.
            text = data[len(_BOM) :].decode("utf-8") if data.startswith(_BOM) else data.decode()
        except UnicodeDecodeError:
            raise ResourceError(
                f"declared context file is not valid UTF-8 text: {shown} (re-save it as UTF-8)"
            ) from None
        texts.append((path, digest, text))
    return texts


def context_manifest(snapshots: Sequence[ResourceSnapshot]) -> ContextManifest:
    """The context delivery manifest for the guard extension (schema_version 1)."""
    entries: list[ContextEntry] = []
    for snapshot in snapshots:
        files: list[ContextFile] = [
            {"path": path, "sha256": digest, "content": text}
            for path, digest, text in _context_texts(snapshot, _looks_single(snapshot))
        ]
        entries.append({"declaredPath": snapshot.declared_path, "files": files})
    return {"schema_version": 1, "entries": entries}


def _looks_single(snapshot: ResourceSnapshot) -> bool:
    """Whether a context snapshot came from one declared file (only changes message wording)."""
    name = posixpath.basename(posixpath.normpath(snapshot.declared_path))
    files = snapshot.files
    return len(files) == 1 and files[0].type != "directory" and files[0].path == name


def verify_unchanged(snapshot: ResourceSnapshot) -> str | None:
    """None when the snapshot still has its recorded fingerprint, else what changed."""
    try:
        current = fingerprint(snapshot.path, label=f"snapshot of {snapshot.declared_path}")
    except ResourceError as error:
        return f"immutable resource changed: {error}"
    if current == snapshot.files:
        return None
    return (
        f"immutable resource changed: snapshot of {snapshot.declared_path} at {snapshot.path} "
        f"({describe_differences(snapshot.files, current)})"
    )


def snapshot_workspace_turn(
    workspace: Path, destination: Path, before: Fingerprint, previous: Fingerprint | None
) -> TurnWorkspace:
    """Copy the workspace after a turn; report changes since the run began and since last turn."""
    label = "workspace"
    first = fingerprint(workspace, escaping="record", label=label)
    destination.mkdir(parents=True, exist_ok=True)
    copied = _tree.copy_tree(workspace, destination, escaping="record", label=label)
    written = fingerprint(destination, escaping="record", label=f"snapshot of {label}")
    again = fingerprint(workspace, escaping="record", label=label)
    for other, expected in ((copied, first), (written, _tree.materialised(first)), (again, first)):
        if other != expected:
            raise ResourceError(
                f"workspace changed while capturing turn (snapshot {destination}: "
                f"{describe_differences(expected, other)})"
            )
    return {
        "path": os.path.realpath(destination),
        "files": fingerprint_json(first),
        "changes": changes(before, first).to_json(),
        "changesSincePrevious": changes(
            previous if previous is not None else before, first
        ).to_json(),
    }
