"""Shared grading helpers: errors, checks, and typed access to recorded run evidence."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pytest_skill_eval.definitions import Expectation

from ..common.entries import FileTooLargeError, read_inside
from ..errors import EvidenceError as EvidenceError
from ..errors import SkillEvalError
from ..evidence.records import Check as Check

# A workspace file a file check reads: at most this many bytes, else the check is an error
# naming the file and the limit (`FileTooLargeError`, an evidence error), never read whole.
FILE_CHECK_LIMIT = 64 * 1024 * 1024


class GradeError(SkillEvalError):
    """Something that cannot be graded; recorded as a grade-error entry, never raised further."""


class ExpectationError(GradeError):
    """The expectation itself is malformed."""


@dataclass(frozen=True, slots=True)
class Context:
    """Everything one expectation is graded against: the group facts and one variant's run."""

    group_type: str
    turn_count: int
    variant: str
    run: Mapping[str, Any]
    run_dir: Path | None

    @property
    def complete(self) -> bool:
        """Only a complete run has evidence to grade; any other state is unavailable."""
        return self.run.get("state") == "complete"


def expected_of(expectation: Expectation, *fields: str) -> dict[str, Any]:
    """The `expected` record of a check: the named fields, in this order, under their
    declared (definition-file) names; a tuple field is recorded as a list."""
    declared = type(expectation).model_fields
    record: dict[str, Any] = {}
    for name in fields:
        value = getattr(expectation, name)
        record[declared[name].alias or name] = list(value) if isinstance(value, tuple) else value
    return record


def graded(expectation: Expectation, passed: bool, expected: Any, observed: Any) -> Check:
    """A check of `expectation` that passed or failed."""
    return _check(expectation, "pass" if passed else "fail", expected, observed)


def unavailable(expectation: Expectation, expected: Any) -> Check:
    """A check of `expectation` whose evidence does not exist."""
    return _check(expectation, "unavailable", expected, None)


def _check(expectation: Expectation, state: str, expected: Any, observed: Any) -> Check:
    return {
        "id": expectation.id,
        "kind": expectation.kind,
        "variant": expectation.variant,
        "state": state,
        "expected": expected,
        "observed": observed,
    }


def text_matches(expect: str, text: str, value: str) -> bool:
    """Case-sensitive, unnormalised text predicate."""
    if expect == "contains":
        return value in text
    if expect == "not-contains":
        return value not in text
    return text == value


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def is_within(path: str, root: str) -> bool:
    """True when canonical `path` is `root` or below it (both already canonical)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


# -- typed access to recorded evidence ---------------------------------------------------


def evidence_fail(detail: str) -> NoReturn:
    """Raise the error for run evidence that does not have the recorded shape."""
    raise EvidenceError(f"run evidence is malformed: {detail}")


def mapping_at(value: object, where: str) -> Mapping[str, Any]:
    """`value` as an object, or an evidence error naming `where`."""
    if not isinstance(value, Mapping):
        evidence_fail(f"{where} must be an object")
    return value


def list_at(value: object, where: str) -> list[Any]:
    """`value` as an array, or an evidence error naming `where`."""
    if not isinstance(value, list):
        evidence_fail(f"{where} must be an array")
    return value


def string_at(value: object, where: str) -> str:
    """`value` as a string, or an evidence error naming `where`."""
    if not isinstance(value, str):
        evidence_fail(f"{where} must be a string")
    return value


def strings_at(value: object, where: str) -> list[str]:
    """`value` as an array of strings."""
    items = list_at(value, where)
    if not all(isinstance(item, str) for item in items):
        evidence_fail(f"{where} must contain only strings")
    return items


def run_turns(run: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The recorded turns of a run (every run.json has `turns`; synthetic runs have none)."""
    turns = list_at(run.get("turns", []), "turns")
    return [mapping_at(turn, f"turns[{index}]") for index, turn in enumerate(turns)]


def turn_record(run: Mapping[str, Any], turn: int) -> Mapping[str, Any] | None:
    """The record of one declared turn, or None when that turn was never observed."""
    for record in run_turns(run):
        if record.get("turn") == turn and not isinstance(record.get("turn"), bool):
            return record
    return None


def read_paths(run: Mapping[str, Any], turn: int | None) -> list[str] | None:
    """Canonical successful read paths of one turn or of the whole run; None if unobserved."""
    if turn is not None:
        record = turn_record(run, turn)
        if record is None:
            return None
        return strings_at(record.get("successfulReadPaths"), f"turn {turn} successfulReadPaths")
    turns = run_turns(run)
    if not turns:
        return strings_at(run.get("successfulReadPaths", []), "successfulReadPaths")
    paths: list[str] = []
    for record in turns:
        where = f"turn {record.get('turn')} successfulReadPaths"
        paths.extend(strings_at(record.get("successfulReadPaths"), where))
    return paths


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One fingerprint entry of a captured workspace."""

    path: str
    type: str
    sha256: str


@dataclass(frozen=True, slots=True)
class Workspace:
    """A captured workspace state: its directory, fingerprint, and changes since the run began."""

    root: str
    files: Mapping[str, FileEntry]
    changes: Mapping[str, list[str]]

    def changed_paths(self) -> list[str]:
        """Created, modified and deleted paths (directories never appear)."""
        return [*self.changes["created"], *self.changes["modified"], *self.changes["deleted"]]


def fingerprint(value: object, where: str) -> dict[str, FileEntry]:
    """Parse a recorded fingerprint list into entries keyed by relative path."""
    entries: dict[str, FileEntry] = {}
    for index, raw in enumerate(list_at(value, where)):
        item = mapping_at(raw, f"{where}[{index}]")
        entry = FileEntry(
            path=string_at(item.get("path"), f"{where}[{index}].path"),
            type=string_at(item.get("type"), f"{where}[{index}].type"),
            sha256=string_at(item.get("sha256"), f"{where}[{index}].sha256"),
        )
        entries[entry.path] = entry
    return entries


def _changes(value: object, where: str) -> dict[str, list[str]]:
    changes = mapping_at(value, where)
    return {
        name: strings_at(changes.get(name), f"{where}.{name}")
        for name in ("created", "modified", "deleted")
    }


def workspace_evidence(ctx: Context, turn: int | None) -> Workspace | None:
    """The final workspace (turn None) or the snapshot after `turn`; None when not captured.

    Turn snapshots carry cumulative changes since before the run, as in the reference.
    """
    run = ctx.run
    if turn is not None:
        record = turn_record(run, turn)
        if record is None:
            return None
        snapshot = record.get("workspace")
        if snapshot is not None:
            where = f"turn {turn} workspace"
            snapshot = mapping_at(snapshot, where)
            return Workspace(
                root=string_at(snapshot.get("path"), f"{where}.path"),
                files=fingerprint(snapshot.get("files"), f"{where}.files"),
                changes=_changes(snapshot.get("changes"), f"{where}.changes"),
            )
        # A one-turn run ends right after its only turn, so its final state is that turn's.
        if ctx.turn_count != 1:
            return None
    effects = run.get("effects")
    if effects is None:
        return None
    effects = mapping_at(effects, "effects")
    return Workspace(
        root=string_at(run.get("workspace"), "workspace"),
        files=fingerprint(effects.get("after"), "effects.after"),
        changes=_changes(effects.get("changes"), "effects.changes"),
    )


def read_workspace_file(workspace: Workspace, path: str) -> bytes | None:
    """Bytes of a captured regular file after re-checking them against the fingerprint.

    None when the fingerprint has no such entry. A symlink, a directory, a path leaving the
    workspace, or bytes that differ from the captured hash are evidence errors.
    """
    entry = workspace.files.get(path)
    if entry is None:
        return None
    if entry.type != "file":
        raise EvidenceError(f"file assertion requires a regular file: {path}")
    root = os.path.realpath(workspace.root)
    full = os.path.join(root, *path.split("/"))
    if os.path.islink(full):
        raise EvidenceError(f"file assertion requires a regular file: {path}")
    if not is_within(os.path.realpath(full), root):
        raise EvidenceError(f"workspace file escapes its workspace: {path}")
    # Opened only as a regular file inside the workspace, never through a link or a FIFO.
    try:
        data = read_inside(root, path, limit=FILE_CHECK_LIMIT)
    except FileTooLargeError:
        raise EvidenceError(
            f"workspace file too large for a file check: {path} holds more than "
            f"{FILE_CHECK_LIMIT} bytes, the most a check reads"
        ) from None
    if data is None or sha256_hex(data) != entry.sha256:
        raise EvidenceError(f"workspace evidence changed after capture: {path}")
    return data
