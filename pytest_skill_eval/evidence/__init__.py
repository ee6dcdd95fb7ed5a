"""Result ids, write-once evidence files, manifests, and the run/group/batch state rules."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RUN_STATES = ("complete", "cancelled", "infrastructure-failed", "invalid", "not-selected")
FAILING_RUN_STATES = frozenset({"invalid", "infrastructure-failed", "cancelled"})
MANIFEST = "manifest.json"


class EvidenceError(Exception):
    """Evidence could not be written, or an existing evidence file would have been overwritten."""


def utc_now() -> str:
    """ISO-8601 UTC timestamp with milliseconds, as the reference writes them."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_result_id(now: datetime | None = None) -> str:
    """`YYYYMMDDHHMMSS-<8 hex>`: sortable by time, unique by randomness."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d%H%M%S")
    return f"{stamp}-{secrets.token_hex(4)}"


def create_result_dir(runs_dir: Path) -> tuple[str, Path]:
    """Create a fresh result directory; an id collision is retried, never reused."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    for _ in range(16):
        result_id = new_result_id()
        path = runs_dir / result_id
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return result_id, path
    raise EvidenceError(f"could not create a unique result directory under {runs_dir}")


def json_bytes(value: Any) -> bytes:
    """The canonical evidence encoding: two-space indent, UTF-8, trailing newline."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_once(path: Path, data: bytes) -> str:
    """Atomically create `path` with `data`; refuse to replace an existing file. Returns sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # link() fails when the target exists: the no-overwrite guarantee rename() lacks.
        os.link(tmp, path)
    except FileExistsError as error:
        raise EvidenceError(
            f"evidence file already exists and is never rewritten: {path}"
        ) from error
    except OSError as error:
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


def read_json(path: Path) -> Any:
    """Read a JSON evidence file."""
    return json.loads(path.read_text(encoding="utf-8"))


def evidence_files(root: Path) -> Iterable[tuple[str, Path]]:
    """Every non-directory entry below `root`, as (POSIX relative path, path), sorted.

    Symlinks (to directories too) are listed, never followed; FIFOs, sockets and devices a
    subject planted are listed too (`entry_digest` never opens them). Relative paths are
    ``os.fsdecode`` text; `write_manifest` records names that are not UTF-8 losslessly.
    """
    found: list[tuple[str, Path]] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(directory)
        for name in (*filenames, *(d for d in dirnames if (base / d).is_symlink())):
            full = base / name
            found.append((full.relative_to(root).as_posix(), full))
    return sorted(found)


def entry_digest(path: Path) -> str:
    """Manifest digest of one entry: file bytes, or the link text for a symlink.

    A FIFO, socket or device is never opened (a FIFO would block forever): its digest is its
    kind, ``"fifo"``, ``"socket"`` or ``"device"``, which no sha256 hex digest can equal.
    """
    from ..workspace._entries import open_regular, special_kind

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
    listed under ``path_b64`` (`pytest_skill_eval.workspace._entries` documents the form).
    """
    from ..workspace._entries import b64_map, recorded_path

    entries = [(rel, path) for rel, path in evidence_files(group_dir) if rel != MANIFEST]
    files = {recorded_path(rel): entry_digest(path) for rel, path in entries}
    manifest: dict[str, Any] = {"schema_version": 1, "files": files}
    encoded = b64_map([rel for rel, _ in entries])
    if encoded:
        manifest["path_b64"] = encoded
    return write_json_once(group_dir / MANIFEST, manifest)


def verify_group(group_dir: Path) -> list[str]:
    """Differences between a group directory and its manifest, one line each."""
    manifest_path = group_dir / MANIFEST
    if not manifest_path.is_file():
        return [f"missing manifest: {manifest_path}"]
    from ..workspace._entries import recorded_path

    recorded: Mapping[str, str] = read_json(manifest_path)["files"]
    actual = {
        recorded_path(rel): path for rel, path in evidence_files(group_dir) if rel != MANIFEST
    }
    problems: list[str] = []
    for rel, digest in sorted(recorded.items()):
        path = actual.get(rel)
        if path is None:
            problems.append(f"missing: {group_dir / rel}")
        elif entry_digest(path) != digest:
            problems.append(f"changed: {group_dir / rel}")
    problems.extend(f"extra: {group_dir / rel}" for rel in sorted(set(actual) - set(recorded)))
    return problems


def run_failed(state: str) -> bool:
    """Whether a run state is an infrastructure outcome (not ordinary evidence)."""
    return state in FAILING_RUN_STATES


def group_state(
    runs: Mapping[str, str], selected: Mapping[str, bool], grade_state: str, resource_error: bool
) -> str:
    """Reference §6.2: only selected runs count; a shared resource error forces `invalid`."""
    states = [runs[v] for v in ("baseline", "candidate") if selected.get(v)]
    if any(s == "cancelled" for s in states):
        return "cancelled"
    if resource_error:
        return "invalid"
    if all(s == "complete" for s in states) and grade_state != "grade-error":
        return "complete"
    return "partially-complete"


def batch_state(group_states: Iterable[str]) -> str:
    """Reference §6.3: cancelled beats everything, complete needs every group complete."""
    states = list(group_states)
    if any(s == "cancelled" for s in states):
        return "cancelled"
    if all(s == "complete" for s in states):
        return "complete"
    return "partially-complete"
