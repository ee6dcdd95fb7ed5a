"""What a directory entry is, how it is opened safely, and how its name is recorded.

A subject may plant anything in its workspace: FIFOs (opening one for reading blocks until a
writer appears), sockets, devices (opening one can have side effects), or names that are not
UTF-8. The evaluator therefore never opens an entry before knowing it is a regular file, and
never lets an undecodable name reach JSON as a lone surrogate.

**Recorded names.** Internally a path is the ``os.fsdecode`` text of its bytes (undecodable
bytes become ``surrogateescape`` code points, U+DC80..U+DCFF, which no valid UTF-8 name can
produce). In evidence a path whose bytes are valid UTF-8 is written as that text, unchanged.
Any other path is written as its *percent-escaped* text (every byte that is not part of a
valid UTF-8 sequence, and every ``%``, as ``%XX`` with upper-case hex), and the record that
holds it also carries the exact bytes in base64 under ``path_b64`` (see `recorded_path` and
`path_b64`). The escaped text is for reading; ``path_b64`` is the lossless, unambiguous form:
a path without a ``path_b64`` beside it is plain UTF-8, a path with one is exactly those bytes.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import stat
from collections.abc import Iterator
from typing import Literal

from ..errors import EvidenceError

SpecialKind = Literal["fifo", "socket", "device"]

_O_PATH: int = getattr(os, "O_PATH", 0)
_PATH_FLAGS = _O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC


def special_kind(mode: int) -> SpecialKind | None:
    """The kind of a non-regular, non-directory, non-symlink entry; None for those three."""
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None


def kind_sha256(kind: str) -> str:
    """The fingerprint hash of an entry that has no content to hash: sha256 of its kind."""
    return hashlib.sha256(kind.encode("ascii")).hexdigest()


def open_regular(path: str | os.PathLike[str], dir_fd: int | None = None) -> int | os.stat_result:
    """A read-only fd of `path` if it is a regular file, else its `lstat` (nothing opened).

    With ``O_PATH`` (Linux) the entry is pinned without opening it, checked with `fstat`, and
    only a regular file is reopened through ``/proc/self/fd``, so a FIFO or device swapped in
    meanwhile is never opened. Elsewhere (or without ``/proc``) the name is opened with
    ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO then does not block) and checked to be the same inode.
    """
    if not _O_PATH:
        return _open_checked(path, dir_fd, None)
    pinned = os.open(path, _PATH_FLAGS, dir_fd=dir_fd)
    try:
        info = os.fstat(pinned)
        if not stat.S_ISREG(info.st_mode):
            return info
        try:
            return os.open(f"/proc/self/fd/{pinned}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return _open_checked(path, dir_fd, info)
    finally:
        os.close(pinned)


def _open_checked(
    path: str | os.PathLike[str], dir_fd: int | None, expected: os.stat_result | None
) -> int | os.stat_result:
    info = os.lstat(path, dir_fd=dir_fd)
    if not stat.S_ISREG(info.st_mode):
        return info
    fd = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    opened = os.fstat(fd)
    same = (opened.st_dev, opened.st_ino) == (info.st_dev, info.st_ino)
    if expected is not None:
        same = same and (opened.st_dev, opened.st_ino) == (expected.st_dev, expected.st_ino)
    if not stat.S_ISREG(opened.st_mode) or not same:
        os.close(fd)
        return opened
    with contextlib.suppress(OSError):
        os.set_blocking(fd, True)
    return fd


def _below(root: str | os.PathLike[str], name: str | os.PathLike[str]) -> list[str] | None:
    """Canonical `root`, then the canonical components of `name` below it (a relative name
    resolves against `root`); None when `name` leaves `root`."""
    try:
        base = os.path.realpath(root)
        real = os.path.realpath(os.path.join(base, name))
    except (OSError, ValueError):
        return None
    relative = os.path.relpath(real, base)
    if relative == os.curdir:
        return [base]
    parts = relative.split(os.sep)
    if os.path.isabs(relative) or os.pardir in parts:
        return None
    return [base, *parts]


def _descend(base: str, parts: list[str]) -> int:
    """A directory fd of `parts` below `base`, each component opened without following links."""
    fd = os.open(base, _DIR_FLAGS)
    try:
        for part in parts:
            child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


class FileTooLargeError(EvidenceError):
    """A file the evaluator reads holds more bytes than its reader takes (never read whole)."""


def _read_regular(name: str, dir_fd: int, limit: int) -> bytes | None:
    """The bytes of the regular file `name`; None when it is not one.

    Raises `FileTooLargeError` when it holds over `limit` bytes: its size is looked at before
    any byte is read, and at most one byte more than `limit` is ever read (a file that grew
    meanwhile is refused too).
    """
    opened = open_regular(name, dir_fd=dir_fd)
    if not isinstance(opened, int):
        return None
    with open(opened, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = b"" if size > limit else handle.read(limit + 1)
    if size > limit or len(data) > limit:
        raise FileTooLargeError(
            f"{name} holds {max(size, len(data))} bytes, more than the {limit} read there"
        )
    return data


def read_inside(
    root: str | os.PathLike[str], name: str | os.PathLike[str], *, limit: int
) -> bytes | None:
    """The bytes of the regular file `name` inside `root`; None when it cannot be read there.

    A relative `name` resolves against `root`, not the evaluator's working directory. Both
    sides are canonicalised, so a name that leaves `root` (by `..`, an absolute path, or a
    symlink planted inside `root` pointing out) is never opened, nor is an entry that is not a
    regular file. The canonical path is then opened one component at a time from `root`
    without following links, so a link swapped in after the check is refused too.

    A file of more than `limit` bytes is never read whole: `FileTooLargeError` names it and
    the limit (each caller picks the limit of what it reads).
    """
    below = _below(root, name)
    if below is None or len(below) < 2:
        return None
    base, *parts = below
    try:
        fd = _descend(base, parts[:-1])
    except OSError:
        return None
    try:
        return _read_regular(parts[-1], fd, limit)
    except FileTooLargeError:
        raise FileTooLargeError(
            f"{os.path.join(base, *parts)} is larger than {limit} bytes, the most read there"
        ) from None
    except OSError:
        return None
    finally:
        os.close(fd)


def files_inside(
    root: str | os.PathLike[str], name: str | os.PathLike[str], depth: int, limit: int
) -> Iterator[tuple[str, bytes]]:
    """Each regular file of at most `limit` bytes, at most `depth` directories below the
    directory `name` inside `root`: its path relative to `name`, and its bytes.

    As in `read_inside`, `name` is opened only where it resolves inside `root`, one component
    at a time without following links; the walk then follows no link and opens no entry that
    is not a regular file, so a link planted or swapped in anywhere leads nowhere outside.
    """
    below = _below(root, name)
    if below is None:
        return
    base, *parts = below
    try:
        fd = _descend(base, parts)
    except OSError:
        return
    try:
        for top, dirs, files, dir_fd in os.fwalk(os.curdir, dir_fd=fd):
            # Nothing deeper than `depth` is walked, however deep a tree the subject built.
            dirs[:] = sorted(dirs) if top.count(os.sep) < depth else []
            for file in sorted(files):
                try:
                    data = _read_regular(file, dir_fd, limit)
                except (OSError, FileTooLargeError):
                    continue
                if data is not None:
                    yield os.path.normpath(os.path.join(top, file)), data
    finally:
        os.close(fd)


def is_plain(path: str) -> bool:
    """Whether `path` came from valid UTF-8 bytes (no surrogate escapes)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def recorded_path(path: str) -> str:
    """The evidence text of an internal path: itself, or its percent-escaped form."""
    if is_plain(path):
        return path
    raw = os.fsencode(path)
    out: list[str] = []
    index = 0
    while index < len(raw):
        for width in (4, 3, 2, 1):
            piece = raw[index : index + width]
            try:
                text = piece.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(text) == 1:
                out.append("%25" if text == "%" else text)
                index += width
                break
        else:
            out.append(f"%{raw[index]:02X}")
            index += 1
    return "".join(out)


def path_b64(path: str) -> str | None:
    """Base64 of the exact bytes of a path that is not plain UTF-8; None for a plain one."""
    if is_plain(path):
        return None
    return base64.b64encode(os.fsencode(path)).decode("ascii")


def path_from_b64(encoded: str) -> str:
    """The internal path of a recorded ``path_b64`` value."""
    return os.fsdecode(base64.b64decode(encoded, validate=True))


def b64_map(paths: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``{recorded text: path_b64}`` for every path of `paths` that is not plain UTF-8."""
    found: dict[str, str] = {}
    for path in paths:
        encoded = path_b64(path)
        if encoded is not None:
            found[recorded_path(path)] = encoded
    return found
