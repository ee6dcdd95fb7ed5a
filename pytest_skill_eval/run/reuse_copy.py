"""Copying a reused run: every entry proved, as it is copied, against its source's seal.

The chain is checked in the same pass that copies, never against an earlier look: the source's
`seal.json` must hash to the root it was verified under (`Source.root`), its group's
`manifest.json` bytes to their leaf there, and each entry to its manifest entry, hashed from
the very bytes written (a file is read once). The copy is staged in a hidden directory beside
the variant's and moved into place only when all of it is proved; on any difference the
staging is removed and the reuse refused, so no result holds a run its claimed seal does not
cover, nor any part of one.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..common.entries import open_regular, recorded_path
from ..errors import SkillEvalError
from ..evidence import layout, shapes
from ..evidence.copy import copy_file, walk
from ..evidence.read import MAX_JSON_BYTES, evidence_bytes, parse_evidence_json
from ..evidence.seal import seal_root
from ..evidence.store import covers_directories, link_digest, sha256_bytes

T = TypeVar("T")
# Read (not copied) and written again by the new result when it persists the reused run; a
# fallback record is never reused (only a run whose run.json is its record is).
READ = (layout.RUN, layout.TRANSCRIPT, layout.FINAL)
_REWRITTEN = (*READ, layout.RUN_FALLBACK)


class ReuseError(SkillEvalError):
    """A run chosen for reuse could not be copied into the new result."""


@dataclass(frozen=True, slots=True)
class Sealed:
    """A variant's entries as its group's sealed manifest lists them (relative to the variant
    directory): files with their digests, and its directories (None: the earlier format,
    which lists none)."""

    files: Mapping[str, str]
    directories: frozenset[str] | None


def sealed_entries(result: Path, root: str, variant_dir: Path) -> Sealed:
    """The entries of `variant_dir` that `result`'s seal with root `root` covers, read once."""
    seal_path = layout.seal_file(result)
    seal = parse_evidence_json(seal_path, evidence_bytes(seal_path), shapes.SEAL)
    leaves = seal["leaves"]
    if seal_root([dict(leaf) for leaf in leaves]) != root:
        raise ReuseError(f"{seal_path} is not the seal it was verified under: it changed since")
    group_dir = variant_dir.parent
    name = f"{layout.GROUPS}/{recorded_path(group_dir.name)}/{layout.MANIFEST}"
    sealed = [leaf.get("sha256") for leaf in leaves if leaf.get("name") == name]
    manifest_path = group_dir / layout.MANIFEST
    data = evidence_bytes(manifest_path)
    if sealed != [sha256_bytes(data)]:
        raise ReuseError(f"{manifest_path} changed since its result's seal was verified")
    manifest = parse_evidence_json(manifest_path, data, shapes.MANIFEST)
    prefix = f"{variant_dir.name}/"
    files = {
        r.removeprefix(prefix): d for r, d in manifest["files"].items() if r.startswith(prefix)
    }
    directories = None
    if covers_directories(manifest):
        names = manifest.get("directories") or []
        directories = frozenset(d.removeprefix(prefix) for d in names if d.startswith(prefix))
    return Sealed(files, directories)


def copy_proved(
    source: Path, target: Path, sealed: Sealed, accept: Callable[[dict[str, bytes]], T]
) -> T:
    """Copy the variant directory `source` to `target` (absent), each entry proved against
    `sealed`; `accept` gets the bytes of the files read instead of copied (`READ`) and
    decides, before the copy is moved into place, what to make of them."""
    staging = target.with_name(f".{target.name}.{secrets.token_hex(4)}.reusing")
    staging.mkdir()
    try:
        kept = _copy_tree(source, staging, sealed)
        accepted = accept(kept)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # a partial copy, never evidence
        raise
    return accepted


def _copy_tree(source: Path, target: Path, sealed: Sealed) -> dict[str, bytes]:
    """Copy `source` into the empty `target`, never following or making a link outside its
    subject's workspace (where a planted link is evidence, copied as the link it is)."""
    seen: set[str] = set()
    directories: set[str] = set()
    kept: dict[str, bytes] = {}
    for relative, names in walk(source):
        base = source / relative
        if base != source:
            (target / relative).mkdir()
            directories.add(recorded_path(relative.as_posix()))
        # A subject's workspace (final, or after a turn) keeps what the subject left there.
        in_workspace = "workspace" in relative.parts
        for name in names:
            rel = recorded_path((relative / name).as_posix())
            expected = sealed.files.get(rel)
            if expected is None:
                raise ReuseError(f"{base / name} is not in its result's sealed manifest")
            seen.add(rel)
            if base == source and name in _REWRITTEN:
                if name in READ:
                    kept[name] = _read_proved(base / name, expected)
                continue
            _copy_entry(base / name, target / relative / name, expected, in_workspace)
    gone = sorted(set(sealed.files) - seen)
    if gone:
        raise ReuseError(f"{source / gone[0]} is gone since its result's seal was verified")
    if sealed.directories is not None and directories != sealed.directories:
        changed = sorted(directories ^ sealed.directories)[0]
        raise ReuseError(f"{source / changed}/ was added or removed since its result's seal")
    return kept


def _changed(path: Path) -> ReuseError:
    return ReuseError(f"{path} changed since its result's seal was verified")


def _read_proved(path: Path, expected: str) -> bytes:
    """A file's bytes, read once, when they are the bytes its sealed manifest lists."""
    opened = open_regular(path)
    if not isinstance(opened, int):
        raise ReuseError(f"{path} is not a regular file")
    with open(opened, "rb") as handle:
        data = handle.read(MAX_JSON_BYTES + 1)
    if sha256_bytes(data) != expected:
        raise _changed(path)
    return data


def _copy_entry(source: Path, target: Path, expected: str, in_workspace: bool) -> None:
    """Copy one entry, hashing what is written (a link's text, a file's bytes as they pass)."""
    mode = os.lstat(source).st_mode
    if stat.S_ISLNK(mode) and in_workspace:
        text = os.readlink(source)
        if link_digest(text) != expected:
            raise _changed(source)
        os.symlink(text, target)
    elif stat.S_ISFIFO(mode) and in_workspace:
        if expected != "fifo":
            raise _changed(source)
        os.mkfifo(target, stat.S_IMODE(mode))  # never opened: a FIFO would block
    elif stat.S_ISREG(mode):
        digest = hashlib.sha256()
        if not copy_file(source, target, mode, digest) or digest.hexdigest() != expected:
            raise _changed(source)
    else:
        raise ReuseError(f"{source} is not a regular file; a reused run is copied only from files")
