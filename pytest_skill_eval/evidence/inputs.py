"""What `run.json` records of a run's inputs (its `resources`): the snapshots of every declared
resource, where the variant's source came from, the runtime profile and how context reached
the subject.

Part of the one description of `run.json` (`records.py` holds the record itself); the same
rules hold: `NotRequired` where an older result can lack a field, unknown fields allowed.
"""

from __future__ import annotations

from typing import NotRequired

# pydantic reads TypedDicts from typing_extensions only, before Python 3.12.
from typing_extensions import TypedDict


class SnapshotRecord(TypedDict):
    """An immutable copy of one declared resource: as declared, where it was taken from, where
    the copy lies, the fingerprint of its files (`{path, type, sha256}` each) and its digest."""

    declaredPath: str
    sourcePath: str
    path: str
    files: list[dict[str, str]]
    sha256: NotRequired[str]


class FixtureRecord(SnapshotRecord):
    """The group's fixture snapshot, and the workspace it was copied to."""

    materializedPath: NotRequired[str]


class SourceRecord(TypedDict):
    """Where a variant's skills and context were taken from: the working tree (its `root`
    when known) or a git ref at a commit."""

    kind: str
    root: NotRequired[str]
    ref: NotRequired[str | None]
    commit: NotRequired[str | None]
    topLevel: NotRequired[str | None]
    rootPrefix: NotRequired[str]


class BundleRecord(TypedDict):
    """A runtime extension bundle: its entry, its root and the snapshots of its resources."""

    entry: str
    root: str
    resources: list[SnapshotRecord]


class RuntimeEnvironment(TypedDict):
    """The environment the group declared: literal values and inherited names."""

    literal: dict[str, str]
    inherit: list[str]


class RuntimeRecord(TypedDict):
    """The declared runtime profile and its bundle snapshots (never inherited values)."""

    host: str
    prompt: str
    session: bool
    environment: RuntimeEnvironment
    extensions: list[BundleRecord]


class ContextDelivery(TypedDict):
    """How declared context reached the subject: `none`, or in the system prompt from the
    manifest at `manifestPath` with its digest."""

    kind: str
    manifestPath: str | None
    sha256: str | None


class ContextFile(TypedDict):
    """One file of a declared context resource, with its digest and text."""

    path: str
    sha256: str
    content: str


class ContextEntry(TypedDict):
    """One declared context resource and its files."""

    declaredPath: str
    files: list[ContextFile]


class ContextManifest(TypedDict):
    """The context delivery manifest a variant's hosts give the model its context from."""

    schema_version: int
    entries: list[ContextEntry]


class RunResources(TypedDict):
    """`run.json`'s `resources`: what the run was given."""

    fixture: NotRequired[FixtureRecord | None]
    source: NotRequired[SourceRecord]
    skills: NotRequired[list[SnapshotRecord] | None]
    context: NotRequired[list[SnapshotRecord]]
    runtime: NotRequired[RuntimeRecord]
    contextDelivery: NotRequired[ContextDelivery]
    targetPath: NotRequired[str | None]
