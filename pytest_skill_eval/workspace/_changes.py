"""Change sets: what was created, modified and deleted between two fingerprints."""

from __future__ import annotations

from dataclasses import dataclass

from ..common.entries import b64_map, recorded_path
from ..evidence.observed import ChangeSet
from ._entry import Fingerprint, sort_key


@dataclass(frozen=True, slots=True)
class Changes:
    """Files created, modified and deleted between two fingerprints."""

    created: tuple[str, ...]
    modified: tuple[str, ...]
    deleted: tuple[str, ...]

    def paths(self) -> tuple[str, ...]:
        """Every changed path, sorted in fingerprint order."""
        return tuple(sorted({*self.created, *self.modified, *self.deleted}, key=sort_key))

    def to_json(self) -> ChangeSet:
        """The evidence form; paths that are not UTF-8 are escaped, their bytes in ``path_b64``."""
        result: ChangeSet = {
            "created": [recorded_path(p) for p in self.created],
            "modified": [recorded_path(p) for p in self.modified],
            "deleted": [recorded_path(p) for p in self.deleted],
        }
        encoded = b64_map(self.paths())
        if encoded:
            result["path_b64"] = encoded
        return result


def changes(before: Fingerprint, after: Fingerprint) -> Changes:
    """Compare two fingerprints; directories are ignored; symlinks and FIFOs count as files."""
    old = {e.path: e.sha256 for e in before if e.type != "directory"}
    new = {e.path: e.sha256 for e in after if e.type != "directory"}
    created = tuple(e.path for e in after if e.type != "directory" and e.path not in old)
    modified = tuple(
        e.path for e in after if e.path in old and e.type != "directory" and old[e.path] != e.sha256
    )
    deleted = tuple(e.path for e in before if e.type != "directory" and e.path not in new)
    return Changes(created, modified, deleted)


def differences(expected: Fingerprint, actual: Fingerprint) -> list[str]:
    """Paths whose entry (including directories) differs between two fingerprints."""
    old = {e.path: e for e in expected}
    new = {e.path: e for e in actual}
    paths = {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
    return sorted(paths, key=sort_key)


def describe_differences(expected: Fingerprint, actual: Fingerprint) -> str:
    """A short human list of what differs, e.g. "modified: a.txt; created: b"."""
    diff = changes(expected, actual)
    parts = [
        f"{name}: {', '.join(paths)}"
        for name, paths in (
            ("created", diff.created),
            ("modified", diff.modified),
            ("deleted", diff.deleted),
        )
        if paths
    ]
    if not parts:
        parts = [f"changed: {', '.join(differences(expected, actual)) or '(entry order)'}"]
    return "; ".join(parts)
