"""Writing evidence: result ids, write-once files, the one atomic replace, hashing, manifests."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Collection, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..common.entries import b64_map, open_regular, recorded_path, special_kind
from ..errors import DiskFullError as DiskFullError
from ..errors import EvidenceError as EvidenceError
from . import layout, shapes
from .read import read_evidence_json
from .records import ManifestRecord
from .redact import Redactor

# Directories whose every write is redacted first (a group's inherited values, credentials).
_REDACTORS: dict[Path, Redactor] = {}


def redact_under(directory: Path, redactor: Redactor) -> None:
    """Redact the secrets of `redactor` from every file written below `directory` from now on."""
    if redactor:
        key = Path(os.path.abspath(directory))
        known = _REDACTORS.get(key)
        _REDACTORS[key] = redactor if known is None else known.merged(redactor)


def redactor_for(path: Path) -> Redactor:
    """The secrets registered for `path` and the directories above it (empty when none)."""
    found = Redactor()
    target = Path(os.path.abspath(path))
    for directory in (target, *target.parents):
        redactor = _REDACTORS.get(directory)
        if redactor is not None:
            found = found.merged(redactor)
    return found


def redacted(path: Path, data: bytes) -> bytes:
    """`data` without the secrets registered for `path`'s directories (the writers' last net)."""
    if not _REDACTORS:
        return data
    target = Path(os.path.abspath(path))
    for directory in (target, *target.parents):
        redactor = _REDACTORS.get(directory)
        if redactor is not None:
            data = _redact_file(redactor, target.name, data)
    return data


def _redact_file(redactor: Redactor, name: str, data: bytes) -> bytes:
    # JSON stays JSON: a value that also occurs outside strings (a digit) is left there.
    if not redactor.redact_bytes(data)[1]:
        return data
    if name.endswith(".jsonl"):
        lines = data.splitlines(keepends=True)
        return b"".join(redactor.redact_json_line(line)[0] for line in lines)
    if name.endswith(".json"):
        try:
            value = json.loads(data.decode("utf-8"))
        except ValueError:
            return redactor.redact_bytes(data)[0]
        clean, counts = redactor.redact_value(value)
        return json_bytes(clean) if counts else data
    return redactor.redact_bytes(data)[0]


def utc_now() -> str:
    """ISO-8601 UTC timestamp with milliseconds, as the reference writes them."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_result_id(now: datetime | None = None) -> str:
    """`YYYYMMDDHHMMSS-<8 hex>`: sortable by time, unique by randomness."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d%H%M%S")
    return f"{stamp}-{secrets.token_hex(4)}"


_FULL = (errno.ENOSPC, errno.EDQUOT)


def disk_full(error: OSError, path: Path) -> DiskFullError | None:
    """The one-line error for a write to `path` that failed because its volume is full."""
    if error.errno not in _FULL:
        return None
    return DiskFullError(
        f"the results disk is full: cannot write {path.name} in {path.parent} "
        f"({error.strerror or os.strerror(error.errno or 0)}); free space there or choose "
        "another --skill-eval-results directory (what was written before is kept)"
    )


def create_result_dir(runs_dir: Path) -> tuple[str, Path]:
    """Create a fresh result directory; an id collision is retried, never reused."""
    for _ in range(16):
        result_id = new_result_id()
        path = runs_dir / result_id
        try:
            path.mkdir(parents=True)  # one step: a runs directory removed meanwhile is remade
        except FileExistsError:
            continue
        except OSError as error:
            raise disk_full(error, path) or error from None
        return result_id, path
    raise EvidenceError(f"could not create a unique result directory under {runs_dir}")


def json_bytes(value: Any) -> bytes:
    """The canonical evidence encoding: two-space indent, UTF-8, trailing newline."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _temporary(path: Path) -> Path:
    # `.<name>.<hex>.tmp`: hidden, unique, and recognisable as a leftover by its owner.
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")


def _write_synced(tmp: Path, data: bytes) -> None:
    with open(tmp, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _staged(path: Path, data: bytes) -> tuple[bytes, Path]:
    """Make `path`'s directory, redact `data` for it, and name its temporary file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise disk_full(error, path) or error from None
    return redacted(path, data), _temporary(path)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one step (tmp, fsync, rename): readers see old or new.

    For the few files that are replaceable by design (the ledger, cassettes, the advisory
    review); evidence is never replaced, see `write_once`. Raises OSError.
    """
    data, tmp = _staged(path, data)
    try:
        _write_synced(tmp, data)
        os.replace(tmp, path)
    except OSError as error:
        raise disk_full(error, path) or error from None
    finally:
        tmp.unlink(missing_ok=True)


def write_once(path: Path, data: bytes) -> str:
    """Atomically create `path` with `data`; refuse to replace an existing file. Returns sha256."""
    data, tmp = _staged(path, data)
    try:
        _write_synced(tmp, data)
        # link() fails when the target exists: the no-overwrite guarantee rename() lacks.
        os.link(tmp, path)
    except FileExistsError as error:
        raise EvidenceError(
            f"evidence file already exists and is never rewritten: {path}"
        ) from error
    except OSError as error:
        # A partly written temporary is removed below: a file is whole or absent.
        full = disk_full(error, path)
        if full is not None:
            raise full from None
        raise EvidenceError(f"could not write evidence file {path}: {error}") from error
    finally:
        tmp.unlink(missing_ok=True)
    return sha256_bytes(data)


def write_json_once(path: Path, value: Any) -> str:
    """Write a JSON evidence file once; returns its sha256."""
    return write_once(path, json_bytes(value))


def sha256_bytes(data: bytes) -> str:
    """sha256 of bytes, as hex."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """sha256 of a file's bytes, streamed."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


# Every JSON file read back goes through the one bounded, validating reader.
read_json = read_evidence_json


def evidence_files(
    root: Path, unreadable: list[tuple[Path, OSError]] | None = None
) -> Iterable[tuple[str, Path]]:
    """Every non-directory entry below `root`, as (POSIX relative path, path), sorted.

    Symlinks (to directories too) are listed, never followed; FIFOs, sockets and devices a
    subject planted are listed too (`entry_digest` never opens them). Relative paths are
    ``os.fsdecode`` text; `write_manifest` records names that are not UTF-8 losslessly.
    With `unreadable`, an entry that cannot be looked at (a path longer than PATH_MAX, a
    directory that cannot be listed) is added there; without it, a directory that cannot be
    listed is skipped and any other such error propagates.
    """
    return _walk(root, unreadable)[0]


def evidence_directories(
    root: Path, unreadable: list[tuple[Path, OSError]] | None = None
) -> list[str]:
    """Every directory below `root` (a link to one is an entry, not a directory), as a POSIX
    relative path, sorted; `unreadable` as for `evidence_files`."""
    return _walk(root, unreadable)[1]


def _walk(
    root: Path, unreadable: list[tuple[Path, OSError]] | None
) -> tuple[list[tuple[str, Path]], list[str]]:
    """(every non-directory entry below `root`, every real directory below it), both sorted."""

    def unlisted(error: OSError) -> None:
        if unreadable is not None:
            unreadable.append((Path(error.filename or root), error))

    found: list[tuple[str, Path]] = []
    directories: list[str] = []
    top = os.fspath(root)
    for directory, dirnames, filenames in os.walk(top, onerror=unlisted):
        dirnames.sort()
        base = Path(directory)
        prefix = f"{directory[len(top) + 1 :]}/".lstrip("/")  # "" at the top
        links = []
        for name in list(dirnames):
            try:
                if (base / name).is_symlink():
                    links.append(name)
            except OSError as error:
                if unreadable is None:
                    raise
                dirnames.remove(name)
                unreadable.append((base / name, error))
        found.extend((prefix + name, base / name) for name in (*filenames, *links))
        directories.extend(prefix + name for name in dirnames if name not in links)
    return sorted(found), sorted(directories)


def link_digest(text: str) -> str:
    """Manifest digest of a symlink: of its link text, marked as a link's."""
    return hashlib.sha256(b"symlink\0" + os.fsencode(text)).hexdigest()


def entry_digest(path: Path) -> str:
    """Manifest digest of one entry: file bytes, or the link text for a symlink.

    A FIFO, socket or device is never opened (a FIFO would block forever): its digest is its
    kind, ``"fifo"``, ``"socket"`` or ``"device"``, which no sha256 hex digest can equal.
    """
    opened = open_regular(path)
    if isinstance(opened, int):
        with open(opened, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    if stat.S_ISLNK(opened.st_mode):
        return link_digest(os.readlink(path))
    return special_kind(opened.st_mode) or "directory"


# The digests a manifest records for an entry without bytes (`entry_digest`).
SPECIAL_DIGESTS = ("fifo", "socket", "device")
# The manifest format: 2 lists the group's directories too (1, before, its files only).
MANIFEST_VERSION = 2


def write_manifest(group_dir: Path) -> str:
    """List every evidence file of a group with its sha256, and every directory below it, in
    `manifest.json`, written last: a directory added or removed (an empty one too) is a
    difference `verify` reports.

    A path that is not UTF-8 is keyed by its percent-escaped text and its exact bytes are
    listed under ``path_b64`` (`pytest_skill_eval.common.entries` documents the form).
    """
    found, directories = _walk(group_dir, None)
    entries = [(rel, path) for rel, path in found if rel != layout.MANIFEST]
    files = {recorded_path(rel): entry_digest(path) for rel, path in entries}
    manifest: ManifestRecord = {
        "schema_version": MANIFEST_VERSION,
        "files": files,
        "directories": [recorded_path(rel) for rel in directories],
    }
    encoded = b64_map([*(rel for rel, _ in entries), *directories])
    if encoded:
        manifest["path_b64"] = encoded
    return write_json_once(group_dir / layout.MANIFEST, manifest)


def covers_directories(manifest: ManifestRecord) -> bool:
    """Whether a manifest lists its group's directories (one written before lists files only)."""
    return isinstance(manifest.get("directories"), list)


def verify_group(
    group_dir: Path, refused: Collection[str] = (), known: Mapping[str, str] | None = None
) -> list[str]:
    """Differences between a group directory and its manifest, one line each.

    A manifest of the earlier format (no `directories`) is checked for its files only: its
    directories are not claimed (`skill-eval verify` says which groups that is). `refused`
    names the entries a merge did not copy (recorded in the merged seal): each may be absent
    where its manifest records a FIFO, socket or device, and only there. `known` gives the
    digests of entries whose bytes were hashed as this process wrote them (a copy it just
    made, `copy_group_tree`): those are not read again.
    """
    digests = known or {}
    manifest_path = group_dir / layout.MANIFEST
    if not os.path.lexists(manifest_path):
        return [f"missing manifest: {manifest_path}"]
    manifest = read_json(manifest_path, shapes.MANIFEST)
    recorded: Mapping[str, str] = manifest["files"]
    unreadable: list[tuple[Path, OSError]] = []
    found, directories = _walk(group_dir, unreadable)
    actual = {recorded_path(rel): path for rel, path in found if rel != layout.MANIFEST}
    # An entry that cannot be looked at is named as such, never a traceback (nor "missing").
    problems = [f"unreadable: {path} ({error.strerror or error})" for path, error in unreadable]
    for rel, digest in sorted(recorded.items()):
        path = actual.get(rel)
        if path is None:
            if rel in refused and digest in SPECIAL_DIGESTS:
                continue  # not copied by the merge that made this result, which says so
            if not any(str(group_dir / rel).startswith(str(p)) for p, _ in unreadable):
                problems.append(f"missing: {group_dir / rel}")
            continue
        try:
            same = (digests.get(rel) or entry_digest(path)) == digest
        except OSError as error:
            problems.append(f"unreadable: {path} ({error.strerror or error})")
            continue
        if not same:
            problems.append(f"changed: {group_dir / rel}")
    problems.extend(f"extra: {group_dir / rel}" for rel in sorted(set(actual) - set(recorded)))
    if covers_directories(manifest):
        listed = set(manifest.get("directories") or [])
        now = {recorded_path(rel) for rel in directories}
        problems.extend(
            f"missing: {group_dir / rel}/ (a directory)"
            for rel in sorted(listed - now)
            if not any(str(group_dir / rel).startswith(str(p)) for p, _ in unreadable)
        )
        problems.extend(f"extra: {group_dir / rel}/ (a directory)" for rel in sorted(now - listed))
    return problems
