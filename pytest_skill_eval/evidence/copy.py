"""Copying sealed evidence: one walk of a sealed directory and one copy of a file, with the
rules of each copy that uses them beside it.

Nothing is followed and nothing is hard-linked: a later change to the source must not reach the
copy, nor the other way round. Each copy keeps its own rule for what it meets:

- a merge (`scale/merge.py`) copies a shard's group: regular files, and the links a subject
  left in its workspace as links; a FIFO, socket or device there is never opened or made (its
  manifest records it by kind, and the merge records it as refused);
- a resume (`run/resume.py`) copies the user's own group alike and makes a FIFO again;
- a reuse (`run/reuse_copy.py`) hashes each entry as it copies it and proves it against the
  sealed manifest.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Protocol

from ..common.entries import open_regular, recorded_path
from ..definitions import VARIANTS
from ..errors import EvidenceError
from . import layout
from .store import link_digest

_CHUNK = 1024 * 1024


class CopyError(EvidenceError):
    """A sealed directory holds an entry no run writes there, or it changed while copied."""


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


def walk(source: Path) -> Iterator[tuple[Path, list[str]]]:
    """Each directory of `source` (itself first) relative to it, with its entries sorted: files,
    FIFOs and links, a link to a directory among them and never followed."""
    top = os.fspath(source)
    for directory, dirnames, filenames in os.walk(top):
        links = [d for d in dirnames if os.path.islink(os.path.join(directory, d))]
        dirnames[:] = sorted(d for d in dirnames if d not in links)
        yield Path(directory[len(top) + 1 :] or "."), sorted((*filenames, *links))


def copy_file(source: Path, target: Path, mode: int, digest: _Digest | None = None) -> bool:
    """Copy a regular file's bytes into the new `target` with the permissions of `mode`,
    feeding `digest` the bytes as they pass; False when `source` is no longer a regular file."""
    opened = open_regular(source)
    if not isinstance(opened, int):
        return False
    with open(opened, "rb") as reading, open(target, "xb") as writing:
        while chunk := reading.read(_CHUNK):
            if digest is not None:
                digest.update(chunk)
            writing.write(chunk)
    os.chmod(target, stat.S_IMODE(mode))
    return True


def copy_group_tree(
    source: Path,
    target: Path,
    *,
    fifos: bool = False,
    digests: MutableMapping[str, str] | None = None,
) -> None:
    """Copy a group directory exactly, never following a link.

    A symlink is copied as a link only where the run records one as evidence: what a subject
    left in its workspace (`<variant>/workspace/…`, `<variant>/turns/<n>/workspace/…`), which
    every reader treats as a link. Anywhere else a reader would follow it (to a `run.json` or
    `final.md` outside the shard, say): the group is refused, as is any other non-regular
    file there. A FIFO, socket or device in a workspace is neither opened nor copied (its
    manifest records it by kind; the merge names it as refused); with `fifos` (a resumed
    group, the user's own), a FIFO is made again, and a socket or device refuses the group.

    With `digests`, each file and link copied is entered there under its manifest path with
    the manifest digest of what was written (a file's bytes hashed as they pass), so the copy
    is proved against its manifest without being read again (`verify_group`'s `known`).
    """
    for relative, names in walk(source):
        destination = target / relative
        destination.mkdir(parents=True, exist_ok=destination != target)
        for name in names:
            rel = relative / name
            digest = _copy_entry(source / rel, destination / name, rel, fifos)
            if digests is not None and digest is not None:
                digests[recorded_path(rel.as_posix())] = digest


def _recorded_link(relative: Path) -> bool:
    """Whether a link (or FIFO, socket, device) at `relative` in a group directory is an entry
    of a subject's workspace, which the run records as it is."""
    parts = relative.parts
    if len(parts) < 3 or parts[0] not in VARIANTS:
        return False  # `resources/workspace/…` or `x/workspace/…` is no subject's workspace
    if len(parts) >= 5 and parts[1] == layout.ATTEMPTS and parts[2].isdigit():
        parts = (parts[0], *parts[3:])  # an earlier attempt's entries are recorded alike
    if parts[1] == "workspace":
        return True
    turn = len(parts) >= 5 and parts[1] == "turns" and parts[2].isdigit()
    return turn and parts[3] == "workspace"


def _copy_entry(source: Path, target: Path, relative: Path, fifos: bool) -> str | None:
    """Copy one entry; the manifest digest of what was written (None: nothing with content)."""
    mode = os.lstat(source).st_mode
    if not stat.S_ISREG(mode) and not _recorded_link(relative):
        kind = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
        raise CopyError(
            f"{source} is {kind}, which no run writes there; refusing to merge or follow it: "
            "a shard's evidence is merged only from inside it"
        )
    if stat.S_ISLNK(mode):
        text = os.readlink(source)
        os.symlink(text, target)
        return link_digest(text)
    if stat.S_ISREG(mode):
        # The digest of the bytes written then proves the copy against its manifest.
        digest = hashlib.sha256()
        if not copy_file(source, target, mode, digest):
            raise CopyError(f"{source} changed while it was being merged; merge again")
        return digest.hexdigest()
    if fifos and stat.S_ISFIFO(mode):
        os.mkfifo(target, stat.S_IMODE(mode))  # never opened: a FIFO would block
    elif fifos:
        raise CopyError(
            f"{source} is a socket or device a subject left in its workspace; it is never "
            "linked into another result"
        )
    # Else a FIFO, socket or device is never opened, linked or made: refused (`refusals`).
    return None
