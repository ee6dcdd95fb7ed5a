"""What a fingerprinted entry is, the order of paths, and a fingerprint's evidence form."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from ..common.entries import path_b64, path_from_b64, recorded_path

EntryType = Literal["file", "directory", "symlink", "fifo", "socket", "device"]

DIRECTORY_SHA256 = hashlib.sha256(b"directory").hexdigest()
SPECIAL_TYPES = frozenset({"fifo", "socket", "device"})


@dataclass(frozen=True, slots=True)
class Entry:
    """One fingerprinted path: POSIX relative path, entry type and content hash.

    `path` is the ``os.fsdecode`` text of the name's bytes (`common.entries` says how a name
    that is not UTF-8 is written to evidence). A FIFO, socket or device has no content that is ever
    read: its hash is `kind_sha256` of its type, as a directory's is of ``"directory"``.
    """

    path: str
    type: EntryType
    sha256: str


Fingerprint = tuple[Entry, ...]
_ENTRY_TYPES: dict[str, EntryType] = {
    "file": "file",
    "directory": "directory",
    "symlink": "symlink",
    "fifo": "fifo",
    "socket": "socket",
    "device": "device",
}


def sort_key(path: str) -> bytes:
    """UTF-16 code-unit order, the order JavaScript's default sort gives."""
    return path.encode("utf-16-be", "surrogatepass")


def symlink_sha256(text: str) -> str:
    """The fingerprint hash of a symlink with the given link text."""
    return hashlib.sha256(b"symlink\0" + os.fsencode(text)).hexdigest()


def inside(path: str, root: str) -> bool:
    """True when canonical `path` is `root` or below it (both canonical)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def fingerprint_json(fp: Fingerprint) -> list[dict[str, str]]:
    """The evidence form: a list of {"path","type","sha256"} objects.

    A path that is not UTF-8 is written percent-escaped with its exact bytes in ``path_b64``.
    """
    result = []
    for e in fp:
        item = {"path": recorded_path(e.path), "type": e.type, "sha256": e.sha256}
        encoded = path_b64(e.path)
        if encoded is not None:
            item["path_b64"] = encoded
        result.append(item)
    return result


def fingerprint_from_json(data: Iterable[Mapping[str, str]]) -> Fingerprint:
    """Rebuild a fingerprint from its evidence form (keeps the given order)."""
    entries = []
    for item in data:
        kind = _ENTRY_TYPES.get(item["type"])
        if kind is None:
            raise ValueError(f"unknown fingerprint entry type: {item['type']}")
        encoded = item.get("path_b64")
        path = path_from_b64(encoded) if encoded is not None else item["path"]
        entries.append(Entry(path, kind, item["sha256"]))
    return tuple(entries)


def fingerprint_digest(fp: Fingerprint) -> str:
    """One sha256 for a whole tree: of the compact, non-ASCII-escaped JSON evidence form."""
    text = json.dumps(fingerprint_json(fp), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
