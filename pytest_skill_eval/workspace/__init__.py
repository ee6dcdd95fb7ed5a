"""Snapshots, fingerprints, Git sources and change sets.

A fingerprint is the sorted list of every entry below a root: files hash their bytes,
directories hash ``b"directory"`` and symlinks hash ``b"symlink\\0"`` plus their link text.
A symlink must resolve to an existing path inside its root; absolute link text that does is
stored (and copied) as the equivalent relative text, so a snapshot never points back into the
tree it was copied from. In a workspace (``escaping="record"``) a FIFO, socket or device is
listed by its kind and never opened or copied, and a name that is not UTF-8 is kept exactly
(``common.entries`` documents how such a name is written to evidence).
"""

from __future__ import annotations

from ._changes import (
    Changes,
    changes,
)
from ._entry import (
    DIRECTORY_SHA256,
    Entry,
    EntryType,
    Fingerprint,
    fingerprint_digest,
    fingerprint_from_json,
    fingerprint_json,
    sort_key,
    symlink_sha256,
)
from ._git import ResolvedSource, SourceResolver, git_entry_kind, git_file
from ._resources import (
    ResourceKind,
    ResourceSnapshot,
    context_manifest,
    snapshot_resource,
    snapshot_workspace_turn,
    verify_unchanged,
)
from ._tree import (
    Escaping,
    ResourceError,
    copy_tree,
    fingerprint,
    snapshot_tree,
)

__all__ = [
    "DIRECTORY_SHA256",
    "Changes",
    "Entry",
    "EntryType",
    "Escaping",
    "Fingerprint",
    "ResolvedSource",
    "ResourceError",
    "ResourceKind",
    "ResourceSnapshot",
    "SourceResolver",
    "changes",
    "context_manifest",
    "copy_tree",
    "fingerprint",
    "fingerprint_digest",
    "fingerprint_from_json",
    "fingerprint_json",
    "git_entry_kind",
    "git_file",
    "snapshot_resource",
    "snapshot_tree",
    "snapshot_workspace_turn",
    "sort_key",
    "symlink_sha256",
    "verify_unchanged",
]
