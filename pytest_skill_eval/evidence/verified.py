"""Remembering which sealed results verified, so a run does not re-read every earlier one.

The gates and the noise floor admit an earlier result only when it verifies (`analysis/
admission.py`), which reads and hashes every file it holds: a cost that grows with every result
kept. A result that verified is remembered, and is verified again in full whenever anything
below it may have changed since.

What is remembered is a token: the HMAC-SHA256, under a key only this user can read, of the
result's real path, its seal root, the evaluator's evidence readers as they are, and a digest
of the `lstat` of every entry below the result (its path, kind and mode, device and inode,
size, link count, and modification and change times in nanoseconds). A token matches only the
very inodes that were verified: a file written, replaced, renamed, added or removed, or a
result copied, gets new inodes or a new change time, which the kernel sets and no user can set
back. The key (`verified/key`, mode 0600, in the user's cache) keeps a token from being made by
anyone who cannot read it: one who can write the results directory (a planted result, a
planted token beside it) cannot make a token that matches, so a planted result is verified in
full. `docs/security.md` gives the reasoning. Without a cache directory the evaluator can use,
every result is verified in full.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from .seal import sealed_root

FORMAT = "1"
_KEY_BYTES = 32
_keys: dict[Path, bytes | None] = {}


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/pytest-skill-eval/verified`, else under `~/.cache`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-skill-eval" / "verified"


def _key(directory: Path) -> bytes | None:
    """This user's key for tokens (made on first use), or None when it cannot be trusted: not
    a regular file of this user's that only they can read and write."""
    if directory not in _keys:
        _keys[directory] = _load_key(directory)
    return _keys[directory]


def _load_key(directory: Path) -> bytes | None:
    path = directory / "key"
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        else:
            with open(fd, "wb") as handle:
                handle.write(secrets.token_bytes(_KEY_BYTES))
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with open(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            key = handle.read(_KEY_BYTES + 1)
    except OSError:
        return None
    private = stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077 == 0
    if not private or info.st_uid != os.getuid() or len(key) != _KEY_BYTES:
        return None
    return key


def stat_digest(result: Path) -> str | None:
    """A digest of the `lstat` of the result and every entry below it (links never followed),
    or None when one cannot be looked at."""
    digest = hashlib.sha256()
    try:
        for line in _stat_lines(os.fspath(result), "."):
            digest.update(line)
    except OSError:
        return None
    return digest.hexdigest()


def _stat_lines(path: str, relative: str) -> Iterator[bytes]:
    """One entry's `lstat` as a line and, for a directory (never a link to one), each of its
    entries' in name order."""
    info = os.lstat(path)
    yield (
        f"{relative!r} {info.st_mode} {info.st_dev} {info.st_ino} {info.st_size} "
        f"{info.st_mtime_ns} {info.st_ctime_ns} {info.st_nlink}\0".encode()
    )
    if stat.S_ISDIR(info.st_mode):
        for name in sorted(os.listdir(path)):
            yield from _stat_lines(os.path.join(path, name), f"{relative}/{name}")


@cache
def _readers() -> str:
    """Which code verified and read a result: a digest of the evidence package's modules as
    they are on disk (another version of them may read a result otherwise)."""
    here = Path(__file__).parent
    found = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(here.glob("*.py"))]
    return hashlib.sha256(repr(found).encode("utf-8")).hexdigest()


def _token(key: bytes, result: Path, stats: str, facts: str) -> str | None:
    root = sealed_root(result)
    if root is None:
        return None
    message = "\0".join((FORMAT, _readers(), os.path.realpath(result), root, stats, facts))
    return hmac.new(key, message.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()


def _entry(directory: Path, result: Path) -> Path:
    name = hashlib.sha256(os.fsencode(os.path.realpath(result))).hexdigest()
    return directory / "results" / name


def remembered(result: Path, stats: str | None) -> str | None:
    """When `result`, as `stats` (`stat_digest`) finds it now, verified before unchanged: the
    facts remembered with it ("" for none); else None."""
    directory = cache_dir()
    key = _key(directory)
    if key is None or stats is None:
        return None
    try:
        kept, _, facts = _entry(directory, result).read_text(encoding="utf-8").partition("\n")
        token = _token(key, result, stats, facts)
    except (OSError, UnicodeError, ValueError):
        return None
    return facts if token is not None and hmac.compare_digest(kept, token) else None


def remember(result: Path, stats: str | None, facts: str = "") -> None:
    """Remember that `result` verified, with `facts` read from it then (one line of text, the
    token covers it), when it is still as `stats` found it before it was verified (else what
    verified may not be what is there: nothing is remembered)."""
    directory = cache_dir()
    key = _key(directory)
    if key is None or stats is None or "\n" in facts or stat_digest(result) != stats:
        return
    try:
        token = _token(key, result, stats, facts)
        if token is None:
            return
        entry = _entry(directory, result)
        entry.parent.mkdir(exist_ok=True, mode=0o700)
        staged = entry.with_name(f".{entry.name}.{secrets.token_hex(4)}")
        staged.write_text(f"{token}\n{facts}", encoding="utf-8")
        os.replace(staged, entry)
    except (OSError, UnicodeError, ValueError):
        return  # not remembered: the next run verifies it in full
