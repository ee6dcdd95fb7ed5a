"""Walking a directory tree into its fingerprint, and fast hashing copies and snapshots of it."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from ..common.entries import (
    kind_sha256,
    open_regular,
    special_kind,
)
from ..errors import SkillEvalError
from ._changes import describe_differences
from ._entry import (
    DIRECTORY_SHA256,
    SPECIAL_TYPES,
    Entry,
    Fingerprint,
    inside,
    sort_key,
    symlink_sha256,
)

Escaping = Literal["raise", "record"]

_CHUNK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class ResourceError(SkillEvalError):
    """A declared resource (or the workspace) cannot be snapshotted as declared."""


def fingerprint(
    root: Path, *, escaping: Escaping = "raise", label: str = "resource"
) -> Fingerprint:
    """Fingerprint the directory `root` (see the module docs for the rules)."""
    canonical = _canonical_directory(root, label)
    return _Walk(canonical, label, escaping, None).run()


def copy_tree(
    source: Path, destination: Path, *, escaping: Escaping = "raise", label: str = "resource"
) -> Fingerprint:
    """Copy `source` into `destination` (created if missing), hashing while copying.

    Symlinks are copied as links; modes are kept; existing files are never overwritten.
    Returns the fingerprint of what was copied (FIFOs, sockets and devices, allowed only when
    `escaping` is "record", are listed but not reproduced; see `materialised`).
    """
    canonical = _canonical_directory(source, label)
    destination = Path(destination)
    if os.path.lexists(destination):
        if destination.is_symlink() or not destination.is_dir():
            raise ResourceError(f"snapshot destination is not a directory: {destination}")
    else:
        destination.mkdir(parents=True)
    target = os.path.realpath(destination)
    if inside(target, canonical):
        raise ResourceError(
            f"{label}: cannot snapshot {canonical} into its own subdirectory {target}; "
            "declare a path that does not contain the results directory"
        )
    walk = _Walk(canonical, label, escaping, target)
    result = walk.run()
    os.chmod(target, stat.S_IMODE(os.stat(canonical).st_mode) & 0o777)
    return result


def snapshot_tree(source: Path, destination: Path, label: str) -> Fingerprint:
    """Copy `source` to `destination`, refusing a source that changes meanwhile."""
    name = f"declared {label}"
    before = fingerprint(source, label=name)
    copied = copy_tree(source, destination, label=name)
    written = fingerprint(destination, label=f"snapshot of {name}")
    after = fingerprint(source, label=name)
    _require_same(name, before, copied, written, after)
    return copied


def snapshot_file(source: Path, destination: Path, name: str, label: str) -> Fingerprint:
    """Copy one regular file to `destination/<name>` with the same changed-while check."""
    declared = f"declared {label}"
    before = (Entry(name, "file", _hash_regular_file(source, declared)),)
    destination.mkdir(parents=True, exist_ok=True)
    copied = (Entry(name, "file", copy_file(source, destination / name, declared)),)
    written = fingerprint(destination, label=f"snapshot of {declared}")
    after = (Entry(name, "file", _hash_regular_file(source, declared)),)
    _require_same(declared, before, copied, written, after)
    return copied


def copy_file(source: Path, destination: Path, label: str) -> str:
    """Copy one regular file (mode kept, never overwriting); return the sha256 of its bytes."""
    fd = _open_declared(source, label)
    try:
        mode = _regular_mode(fd, label, str(source))
        try:
            out = os.open(destination, _CREATE_FLAGS, 0o600)
        except FileExistsError as error:
            raise ResourceError(f"refusing to overwrite existing {destination}") from error
        digest = _write(fd, out, mode)
    finally:
        os.close(fd)
    return digest


def _require_same(name: str, *fingerprints: Fingerprint) -> None:
    first = fingerprints[0]
    for other in fingerprints[1:]:
        if other != first:
            raise ResourceError(
                f"{name} changed while it was being snapshotted "
                f"({describe_differences(first, other)}); retry once nothing is writing to it"
            )


def _canonical_directory(path: Path, label: str) -> str:
    try:
        canonical = os.path.realpath(path, strict=True)
    except OSError as error:
        raise ResourceError(f"{label}: directory does not exist: {path}") from error
    if not os.path.isdir(canonical):
        raise ResourceError(f"{label}: is not a directory: {path}")
    return canonical


def _hash_regular_file(path: Path, label: str) -> str:
    fd = _open_declared(path, label)
    try:
        _regular_mode(fd, label, str(path))
        return _pump(fd, None)
    finally:
        os.close(fd)


def _open_declared(path: Path, label: str) -> int:
    """Open a declared regular file for reading; anything else is refused before opening."""
    try:
        fd = open_regular(path)
    except OSError as error:
        raise ResourceError(f"{label}: cannot read {path}: {error.strerror}") from error
    if isinstance(fd, os.stat_result):
        raise ResourceError(
            f"{label}: unsupported entry: {path} (not a regular file, directory or symlink)"
        )
    return fd


def materialised(fp: Fingerprint) -> Fingerprint:
    """The entries a copy reproduces: FIFOs, sockets and devices are recorded, never copied."""
    return tuple(e for e in fp if e.type not in SPECIAL_TYPES)


def _regular_mode(fd: int, label: str, shown: str) -> int:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise ResourceError(
            f"{label}: unsupported entry: {shown} (not a regular file, directory or symlink)"
        )
    return stat.S_IMODE(info.st_mode) & 0o777


def _write(fd: int, out: int, mode: int) -> str:
    """Copy `fd` into the new file `out`, give it `mode` and close it; the bytes' sha256."""
    try:
        digest = _pump(fd, out)
        os.fchmod(out, mode)
    finally:
        os.close(out)
    return digest


def _pump(fd: int, out: int | None) -> str:
    """Read `fd` to its end once, hashing and (optionally) writing every chunk."""
    digest = hashlib.sha256()
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            return digest.hexdigest()
        digest.update(chunk)
        if out is not None:
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]


def _portable(text: str, depth: int) -> bool:
    """A relative link text whose lexical walk never climbs above the tree's root."""
    if text.startswith("/"):
        return False
    for part in text.split("/"):
        if part in ("", "."):
            continue
        depth += -1 if part == ".." else 1
        if depth < 0:
            return False
    return True


class _Walk:
    """One pass over a canonical tree: fingerprint it and, given a target, copy it."""

    def __init__(self, root: str, label: str, escaping: Escaping, target: str | None) -> None:
        self.root = root
        self.label = label
        self.escaping = escaping
        self.target = target
        self.entries: list[Entry] = []

    def run(self) -> Fingerprint:
        try:
            source_fd = os.open(self.root, _DIR_FLAGS)
        except OSError as error:
            raise ResourceError(
                f"{self.label}: cannot read {self.root}: {error.strerror}"
            ) from error
        target_fd = None
        try:
            if self.target is not None:
                target_fd = os.open(self.target, _DIR_FLAGS)
            self._directory(source_fd, target_fd, "", 0)
        finally:
            os.close(source_fd)
            if target_fd is not None:
                os.close(target_fd)
        return tuple(sorted(self.entries, key=lambda e: sort_key(e.path)))

    def _fail(self, rule: str, rel: str, fix: str = "") -> ResourceError:
        return ResourceError(f"{self.label}: {rule}: {rel}" + (f" ({fix})" if fix else ""))

    def _directory(self, fd: int, out: int | None, prefix: str, depth: int) -> None:
        try:
            with os.scandir(fd) as listing:
                items = sorted(listing, key=lambda item: item.name)
        except OSError as error:
            raise self._fail(f"cannot list directory ({error.strerror})", prefix or ".") from error
        for item in items:
            name = item.name
            rel = prefix + name
            if self.escaping == "raise":
                try:
                    name.encode("utf-8")
                except UnicodeEncodeError:
                    raise self._fail(
                        "entry name is not valid UTF-8", repr(rel), "rename it"
                    ) from None
            try:
                if item.is_symlink():
                    self._symlink(fd, out, name, rel, prefix, depth)
                elif item.is_dir(follow_symlinks=False):
                    self._subdirectory(fd, out, name, rel, depth)
                elif item.is_file(follow_symlinks=False):
                    self._file(fd, out, name, rel)
                else:
                    self._special(item.stat(follow_symlinks=False).st_mode, rel)
            except FileExistsError as error:
                raise ResourceError(
                    f"{self.label}: refusing to overwrite existing {rel} in {self.target}"
                ) from error
            except OSError as error:
                raise self._fail(f"cannot read entry ({error.strerror})", rel) from error

    def _subdirectory(self, fd: int, out: int | None, name: str, rel: str, depth: int) -> None:
        self.entries.append(Entry(rel, "directory", DIRECTORY_SHA256))
        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
        child_out = None
        try:
            mode = stat.S_IMODE(os.fstat(child).st_mode) & 0o777
            if out is not None:
                # Merging into an existing directory is fine; files are still never replaced.
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=out)
                child_out = os.open(name, _DIR_FLAGS, dir_fd=out)
            self._directory(child, child_out, rel + "/", depth + 1)
            if child_out is not None:
                os.fchmod(child_out, mode)
        finally:
            os.close(child)
            if child_out is not None:
                os.close(child_out)

    def _special(self, mode: int, rel: str) -> None:
        """A FIFO, socket or device: recorded (never opened, never copied) or refused."""
        kind = special_kind(mode)
        if kind is None or self.escaping == "raise":
            raise self._fail(
                "unsupported entry",
                rel,
                "a FIFO, socket or device; only files, directories and symlinks may be snapshotted",
            )
        self.entries.append(Entry(rel, kind, kind_sha256(kind)))

    def _file(self, fd: int, out: int | None, name: str, rel: str) -> None:
        source = open_regular(name, fd)
        if isinstance(source, os.stat_result):
            # Replaced by something else since it was listed: record what it is now.
            if stat.S_ISDIR(source.st_mode) or stat.S_ISLNK(source.st_mode):
                raise self._fail("entry changed while it was being read", rel)
            self._special(source.st_mode, rel)
            return
        try:
            mode = _regular_mode(source, self.label, rel)
            if out is None:
                digest = _pump(source, None)
            else:
                written = os.open(name, _CREATE_FLAGS, 0o600, dir_fd=out)
                digest = _write(source, written, mode)
        finally:
            os.close(source)
        self.entries.append(Entry(rel, "file", digest))

    def _symlink(
        self, fd: int, out: int | None, name: str, rel: str, prefix: str, depth: int
    ) -> None:
        text = os.readlink(name, dir_fd=fd)
        parent = os.path.join(self.root, prefix) if prefix else self.root
        link = os.path.join(parent, name)
        try:
            resolved: str | None = os.path.realpath(link, strict=True)
        except OSError:
            resolved = None
        if resolved is None or not inside(resolved, self.root):
            if self.escaping == "raise":
                raise self._fail(
                    "symlink escapes its declared root",
                    rel,
                    "a link must resolve to an existing path inside the declared root",
                )
            effective = text
        elif _portable(text, depth):
            effective = text
        else:
            # Absolute (or root-climbing) text that lands inside: store the equivalent relative
            # text, so copies stay self-contained and fingerprints do not depend on location.
            effective = _relative_text(parent, text, resolved, self.root)
        if out is not None:
            os.symlink(effective, name, dir_fd=out)
        self.entries.append(Entry(rel, "symlink", symlink_sha256(effective)))


def _relative_text(parent: str, text: str, resolved: str, root: str) -> str:
    """Relative link text from `parent` to what `text` names, resolving all but its last part."""
    lexical = os.path.join(parent, text)
    head, name = os.path.split(lexical)
    target = resolved
    if name not in ("", ".", ".."):
        try:
            candidate = os.path.join(os.path.realpath(head, strict=True), name)
        except OSError:
            candidate = ""
        if candidate and inside(candidate, root):
            target = candidate
    return os.path.relpath(target, parent)


def sorted_paths(paths: Sequence[str]) -> list[str]:
    """Paths in fingerprint order."""
    return sorted(paths, key=sort_key)
