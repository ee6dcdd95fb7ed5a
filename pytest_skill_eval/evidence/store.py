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

from ..errors import DiskFullError as DiskFullError
from ..errors import EvidenceError as EvidenceError
from ..workspace.entries import b64_map, open_regular, recorded_path, special_kind
from . import layout, shapes
from .read import ReadError, read_evidence_json
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
            runs_dir.mkdir(parents=True, exist_ok=True)
            path.mkdir()
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

    def unlisted(error: OSError) -> None:
        if unreadable is not None:
            unreadable.append((Path(error.filename or root), error))

    found: list[tuple[str, Path]] = []
    for directory, dirnames, filenames in os.walk(root, onerror=unlisted):
        dirnames.sort()
        base = Path(directory)
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
        for name in (*filenames, *links):
            full = base / name
            found.append((full.relative_to(root).as_posix(), full))
    return sorted(found)


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
        return hashlib.sha256(b"symlink\0" + os.fsencode(os.readlink(path))).hexdigest()
    return special_kind(opened.st_mode) or "directory"


def write_manifest(group_dir: Path) -> str:
    """List every evidence file of a group with its sha256, in `manifest.json`, written last.

    A path that is not UTF-8 is keyed by its percent-escaped text and its exact bytes are
    listed under ``path_b64`` (`pytest_skill_eval.workspace.entries` documents the form).
    """
    entries = [(rel, path) for rel, path in evidence_files(group_dir) if rel != layout.MANIFEST]
    files = {recorded_path(rel): entry_digest(path) for rel, path in entries}
    manifest: dict[str, Any] = {"schema_version": 1, "files": files}
    encoded = b64_map([rel for rel, _ in entries])
    if encoded:
        manifest["path_b64"] = encoded
    return write_json_once(group_dir / layout.MANIFEST, manifest)


def verify_group(group_dir: Path) -> list[str]:
    """Differences between a group directory and its manifest, one line each."""
    manifest_path = group_dir / layout.MANIFEST
    if not os.path.lexists(manifest_path):
        return [f"missing manifest: {manifest_path}"]
    recorded: Mapping[str, str] = read_json(manifest_path, shapes.MANIFEST)["files"]
    unreadable: list[tuple[Path, OSError]] = []
    actual = {
        recorded_path(rel): path
        for rel, path in evidence_files(group_dir, unreadable)
        if rel != layout.MANIFEST
    }
    # An entry that cannot be looked at is named as such, never a traceback (nor "missing").
    problems = [f"unreadable: {path} ({error.strerror or error})" for path, error in unreadable]
    for rel, digest in sorted(recorded.items()):
        path = actual.get(rel)
        if path is None:
            if not any(str(group_dir / rel).startswith(str(p)) for p, _ in unreadable):
                problems.append(f"missing: {group_dir / rel}")
            continue
        try:
            same = entry_digest(path) == digest
        except OSError as error:
            problems.append(f"unreadable: {path} ({error.strerror or error})")
            continue
        if not same:
            problems.append(f"changed: {group_dir / rel}")
    problems.extend(f"extra: {group_dir / rel}" for rel in sorted(set(actual) - set(recorded)))
    return problems


def verify_result(
    result: Path, advisory: Collection[str] = (), expected_root: str | None = None
) -> list[str]:
    """Every changed, missing or extra evidence file of a result, one line each.

    Each group is checked against its manifest, and the result against its seal: a changed
    `invocation.json` or `summary.json`, a group directory that is gone or new, and a manifest
    rewritten with its files each get their own line. With `expected_root` (hex), a result whose
    recomputed root differs is reported too, even when its seal was recomputed to match.
    `advisory` names group entries that are replaceable and never in a manifest.
    """
    groups = layout.groups_dir(result)
    if not groups.is_dir():
        return [f"not a result directory (no {layout.GROUPS}/): {result}"]
    problems: list[str] = []
    for entry in sorted(result.iterdir()):
        if entry.name not in (layout.GROUPS, *layout.RESULT_FILES):
            problems.append(f"extra: {entry}")
    problems.extend(
        f"missing: {result / name}" for name in layout.RESULT_FILES if not (result / name).is_file()
    )
    for group_dir in sorted(p for p in groups.iterdir() if p.is_dir()):
        skipped = tuple(f"extra: {group_dir / name}" for name in advisory)
        problems.extend(
            line
            for line in verify_group(group_dir)
            if not any(line == a or line.startswith(a + "/") for a in skipped)
        )
    problems.extend(verify_seal(result, expected_root))
    return problems


# ---------------------------------------------------------------------------------------------
# The result seal: a hash tree over a result, written last.
#
# Its leaves, in order: `invocation.json`, the groups the invocation planned (ids as canonical
# JSON), each group's `manifest.json` (which in turn lists every evidence file of its group), and
# `summary.json`. A leaf hashes as sha256("<name>\0<sha256 of its bytes>"); the root is the
# sha256 of the leaf hashes, in order. A changed byte anywhere below a manifest changes the
# manifest or fails it; a rewritten manifest changes the root, which CI printed.

SEAL_PREFIX = "sha256:"


def planned_groups(invocation: Any) -> list[str]:
    """Ids of the groups `invocation.json` planned: its definitions' groups its selector picks."""
    if not isinstance(invocation, Mapping):
        return []
    selection = invocation.get("selection")
    selector = selection.get("group") if isinstance(selection, Mapping) else None
    planned: set[str] = set()
    definitions = invocation.get("definitions")
    for definition in definitions if isinstance(definitions, list) else []:
        groups = definition.get("groups") if isinstance(definition, Mapping) else None
        for group in groups if isinstance(groups, list) else []:
            if not isinstance(group, Mapping) or not isinstance(group.get("id"), str):
                continue
            if selector is None or selector in (group["id"], str(group.get("position"))):
                planned.add(group["id"])
    return sorted(planned)


def _file_sha256(path: Path) -> str | None:
    return sha256_file(path) if path.is_file() and not path.is_symlink() else None


def _group_dirs(result: Path) -> list[Path]:
    groups = layout.groups_dir(result)
    if not groups.is_dir():
        return []
    return sorted(p for p in groups.iterdir() if p.is_dir() and not p.is_symlink())


def seal_leaves(result: Path) -> list[dict[str, Any]]:
    """The seal's leaves as the result is now on disk (a missing file's sha256 is None)."""
    invocation_path = layout.invocation_file(result)
    try:
        invocation = read_json(invocation_path) if invocation_path.is_file() else None
    except ReadError:
        invocation = None  # a damaged invocation.json still has a (changed) sha256 leaf
    planned = planned_groups(invocation)
    leaves: list[dict[str, Any]] = [
        {"name": layout.INVOCATION, "sha256": _file_sha256(invocation_path)},
        {
            "name": layout.PLANNED_GROUPS,
            "groups": planned,
            "sha256": sha256_bytes(json.dumps(planned, ensure_ascii=False).encode("utf-8")),
        },
    ]
    for group_dir in _group_dirs(result):
        name = f"{layout.GROUPS}/{recorded_path(group_dir.name)}/{layout.MANIFEST}"
        leaves.append({"name": name, "sha256": _file_sha256(group_dir / layout.MANIFEST)})
    leaves.append({"name": layout.SUMMARY, "sha256": _file_sha256(layout.summary_file(result))})
    return leaves


def seal_root(leaves: Iterable[Mapping[str, Any]]) -> str:
    """The root hash of a list of leaves (hex)."""
    tree = hashlib.sha256()
    for leaf in leaves:
        line = f"{leaf['name']}\0{leaf['sha256'] or 'missing'}".encode("utf-8", "surrogateescape")
        tree.update(hashlib.sha256(line).digest())
    return tree.hexdigest()


def write_seal(result: Path) -> str:
    """Seal a finished result: write `seal.json` once, after `summary.json`. Returns the root."""
    leaves = seal_leaves(result)
    root = seal_root(leaves)
    write_json_once(
        layout.seal_file(result),
        {"schema_version": 1, "algorithm": "sha256", "leaves": leaves, "root": root},
    )
    return root


def sealed_root(result: Path) -> str | None:
    """The root hash `seal.json` records, or None when the result has no readable seal."""
    try:
        root = read_json(layout.seal_file(result), shapes.SEAL)["root"]
    except ReadError:
        return None
    return str(root)


def parse_root(text: str) -> str:
    """A root hash as given on the command line (`sha256:<hex>` or `<hex>`), lower-case hex."""
    digest = text.strip().lower().removeprefix(SEAL_PREFIX)
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise EvidenceError(
            f"--root expects the seal's root hash (sha256:<64 hex digits>), not {text!r}; "
            "the definition root goes before the command: skill-eval --root DIR verify RESULT"
        )
    return digest


def _load_seal(path: Path) -> list[dict[str, Any]]:
    seal = read_json(path, shapes.SEAL)
    leaves = [dict(leaf) for leaf in seal["leaves"]]
    if seal_root(leaves) != seal["root"]:
        raise EvidenceError(
            f"changed: {path} (its root hash is not the hash of its leaves; the seal was edited)"
        )
    return leaves


def verify_seal(result: Path, expected_root: str | None = None) -> list[str]:
    """What differs between a result and its seal (and `expected_root`), one line each.

    A file that is missing altogether is reported by `verify_result`; here each sealed leaf
    that changed, a sealed group that is gone and a group the seal never saw get a line.
    """
    actual = seal_leaves(result)
    problems: list[str] = []
    seal_path = layout.seal_file(result)
    if os.path.lexists(seal_path):
        problems.extend(_seal_differences(result, _load_seal(seal_path), actual))
    if expected_root is not None:
        root = seal_root(actual)
        if root != expected_root:
            problems.append(
                f"root mismatch: {result} hashes to {SEAL_PREFIX}{root}, not the expected "
                f"{SEAL_PREFIX}{expected_root}"
            )
    return problems


def _seal_differences(
    result: Path, sealed: list[dict[str, Any]], actual: list[dict[str, Any]]
) -> list[str]:
    now = {leaf["name"]: leaf for leaf in actual}
    then = {leaf["name"]: leaf for leaf in sealed}
    problems: list[str] = []
    for name, leaf in then.items():
        current = now.get(name)
        if name == layout.PLANNED_GROUPS:
            if current is not None and current["sha256"] != leaf["sha256"]:
                problems.append(
                    f"changed: the planned groups ({layout.INVOCATION} now plans "
                    f"{', '.join(current['groups']) or 'none'}; sealed: "
                    f"{', '.join(map(str, leaf.get('groups') or [])) or 'none'})"
                )
            continue
        if current is None:
            # Only a group's manifest leaf can vanish: its whole directory is gone.
            problems.append(f"missing: {result / name.rsplit('/', 1)[0]} (a sealed group)")
        elif current["sha256"] is None or current["sha256"] == leaf["sha256"]:
            continue  # unchanged, or missing and reported as missing by verify_result
        elif name.startswith(f"{layout.GROUPS}/"):
            problems.append(
                f"changed: {result / name} (not the sealed manifest: the group's evidence "
                "was rewritten with its hashes)"
            )
        else:
            problems.append(f"changed: {result / name} (not the sealed {name})")
    problems.extend(
        f"extra: {result / name.rsplit('/', 1)[0]} (a group the seal does not cover)"
        for name in now
        if name not in then
    )
    return problems
