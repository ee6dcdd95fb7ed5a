"""Remembering which sealed results verified, so a run does not re-read every earlier one.

The gates and the noise floor admit an earlier result only when it verifies (`analysis/
admission.py`), and `--skill-eval-reuse`, `--skill-eval-affected-since` and `--skill-eval-resume`
take one only when its seal does (`seal_problems`): each reads and hashes every file the result
holds, a cost that grows with every result kept. A result that verified is remembered, and is
verified again in full whenever anything below it may have changed since.

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

Each entry (`verified/results/<sha256 of the real path>`, mode 0600) holds the token, the
digest of the readers that made it and the result's real path, which `prune` uses to drop the
entries that can never match again, so the cache does not grow with every result ever kept.

The same tokens remember what was read of a tree the evaluator checks at every run and that is
not a result (`recalled`, `remember_tree`): the digest of an installed host's files, and that a
built bundle or copy in the evaluator's cache matched its manifest. A tree is compared by the
`lstat` of every entry below it and the `stat` of each link's target (`tree_digest`). Each
entry (`verified/trees/<sha256 of the kind and real path>`) is dropped once its tree is gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
import string
import time
from collections.abc import Collection, Iterator
from functools import cache
from pathlib import Path

from ..errors import SkillEvalError
from . import layout, read
from .seal import sealed_root, unfinished, verify_result

FORMAT = "2"
RESULTS = "results"  # the directory of the cache's entries, one per result
TREES = "trees"  # the directory of the entries of other trees, one per kind and tree
_STAGED = "."  # an entry being written begins with this
_STAGED_AGE_S = 3600.0  # a staged entry older than this was left by a run that stopped
_SETTLED_S = 2.0  # a tree changed more recently than this is read again, not remembered
_KEY_BYTES = 32
_keys: dict[Path, bytes | None] = {}
_pruned: set[Path] = set()  # the caches this process has pruned part of
_pruned_trees: set[Path] = set()  # the caches whose tree entries this process has pruned


@read.read_fresh()
def problems(result: Path) -> list[str]:
    """What `skill-eval verify` finds changed in one result, and a summary or invocation record
    this version cannot read; empty: it verifies. A result remembered as verified and unchanged
    since is not read again; one that verifies now is remembered."""
    from . import shard_seal  # the verifier of `skill-eval verify`, which reads every file

    try:
        incomplete = unfinished(result)
        if incomplete is not None:
            return [incomplete]
        stats = stat_digest(result)
        if remembered(result, stats) is not None:
            return []  # verified before, and not one entry of it changed since
        found = shard_seal.verify(result)
        if not found:
            read.load_summary(result)
            read.load_invocation(result)
            remember(result, stats)
        return found
    except (SkillEvalError, OSError) as error:
        return [str(error)]


@read.read_fresh()
def seal_problems(result: Path, advisory: Collection[str] = ()) -> list[str]:
    """What `seal.verify_result(result, advisory)` finds changed in a result, one line each.

    When no group holds an advisory entry that `advisory` does not leave out, a result that
    `problems` accepts (remembered as verified and unchanged since, or verified now and
    remembered) passes it too, and is not read again: `problems` checks every file of it
    against its seal, leaving out only those entries. Otherwise the result is verified in full.
    """
    groups = layout.groups_dir(result)
    others = layout.ADVISORY.difference(advisory)
    try:
        held = any(os.path.lexists(g / n) for g in groups.iterdir() for n in others)
    except OSError:
        held = True  # verified in full, which names what cannot be read
    if not held and not problems(result):
        return []
    return verify_result(result, advisory)


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


def stat_digest(result: Path, *, targets: bool = False) -> str | None:
    """A digest of the `lstat` of the result and every entry below it (links never followed),
    or None when one cannot be looked at; with `targets`, each link's target's `stat` too (for
    a reader that reads a linked file's bytes)."""
    digest = hashlib.sha256()
    try:
        for line in _stat_lines(os.fspath(result), ".", targets):
            digest.update(line)
    except OSError:
        return None
    return digest.hexdigest()


def _stat_lines(path: str, relative: str, targets: bool) -> Iterator[bytes]:
    """One entry's `lstat` as a line (with `targets`, a link's target's `stat` after it) and,
    for a directory (never a link to one), each of its entries' in name order."""
    info = os.lstat(path)
    yield _stat_line(relative, info)
    if targets and stat.S_ISLNK(info.st_mode):
        try:
            yield _stat_line("->", os.stat(path))
        except OSError:
            yield b"-> dangling\0"
    if stat.S_ISDIR(info.st_mode):
        for name in sorted(os.listdir(path)):
            yield from _stat_lines(os.path.join(path, name), f"{relative}/{name}", targets)


def _stat_line(relative: str, info: os.stat_result) -> bytes:
    return (
        f"{relative!r} {info.st_mode} {info.st_dev} {info.st_ino} {info.st_size} "
        f"{info.st_mtime_ns} {info.st_ctime_ns} {info.st_nlink}\0".encode()
    )


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
    return directory / RESULTS / name


def remembered(result: Path, stats: str | None) -> str | None:
    """When `result`, as `stats` (`stat_digest`) finds it now, verified before unchanged: the
    facts remembered with it ("" for none); else None."""
    directory = cache_dir()
    key = _key(directory)
    if key is None or stats is None:
        return None
    try:
        text = _entry(directory, result).read_text(encoding="utf-8")
        kept, _, _, facts = _fields(text)
        token = _token(key, result, stats, facts)
    except (OSError, UnicodeError, ValueError):
        return None
    return facts if token is not None and hmac.compare_digest(kept, token) else None


def _fields(text: str) -> tuple[str, str, str, str]:
    """An entry's token, the readers it was made by, the result's real path (its bytes in hex)
    and the facts remembered with it; ValueError when it is not an entry of this format."""
    fields = text.split("\n", 3)
    if len(fields) != 4:
        raise ValueError("not an entry of this format")
    token, readers, path, facts = fields
    return token, readers, path, facts


def remember(result: Path, stats: str | None, facts: str = "") -> None:
    """Remember that `result` verified, with `facts` read from it then (one line of text, the
    token covers it), when it is still as `stats` found it before it was verified (else what
    verified may not be what is there: nothing is remembered). The first time a process
    remembers a result, part of the cache is pruned (`prune`)."""
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
        path = os.fsencode(os.path.realpath(result)).hex()
        _write_private(entry, f"{token}\n{_readers()}\n{path}\n{facts}")
    except (OSError, UnicodeError, ValueError):
        return  # not remembered: the next run verifies it in full
    if directory not in _pruned:
        _pruned.add(directory)
        prune(secrets.choice(string.hexdigits[:16]))


def _write_private(entry: Path, text: str) -> None:
    """Write `entry` whole, readable and writable by this user only (staged, then renamed)."""
    staged = entry.with_name(f"{_STAGED}{entry.name}.{secrets.token_hex(4)}")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(staged, entry)


def prune(prefix: str = "") -> int:
    """Drop the remembered results whose names begin with `prefix` (every one: "") that can
    never match again: the result is gone from where it was verified, the entry was made by
    evidence readers other than these (they read a result otherwise), or it is no entry of this
    format; and staged entries a stopped run left. Returns how many were dropped.

    Bounded work: `remember` prunes one of sixteen parts of the cache (by a random first hex
    digit of the names) once per process, so every entry is looked at now and then and a
    process reads a sixteenth of the cache at most.
    """
    results = cache_dir() / RESULTS
    dropped = 0
    try:
        names = [n for n in os.listdir(results) if n.startswith(prefix) or n.startswith(_STAGED)]
    except OSError:
        return 0
    for name in names:
        entry = results / name
        if _stale(entry):
            with contextlib.suppress(OSError):
                entry.unlink()
                dropped += 1
    return dropped


def _stale(entry: Path, *, of_result: bool = True) -> bool:
    """Whether a cache entry can never match again (`prune`, `_prune_trees`): a result's made
    by other readers, or any whose result or tree is gone."""
    try:
        if entry.name.startswith(_STAGED):
            return time.time() - entry.lstat().st_mtime > _STAGED_AGE_S
        _, readers, path, _ = _fields(entry.read_text(encoding="utf-8"))
        if of_result and readers != _readers():
            return True
        return not os.path.lexists(os.fsdecode(bytes.fromhex(path)))
    except (OSError, UnicodeError, ValueError):
        return True


def tree_digest(tree: Path) -> str | None:
    """What `recalled` and `remember_tree` compare a tree by: the `stat_digest` of it (where it
    really is: a tree that is itself a link is read through it) and of its links' targets. A
    link to a directory below it counts by the directory's own `stat`, not its contents: a
    reader of a remembered tree must not read through one."""
    return stat_digest(Path(os.path.realpath(tree)), targets=True)


def recalled(tree: Path, kind: str, stats: str | None) -> str | None:
    """What was remembered of `tree` as `kind` (`remember_tree`), when not one entry below it
    (nor a file a link below it names) has changed since: `stats` is its `tree_digest` now.
    None: read it again."""
    directory = cache_dir()
    key = _key(directory)
    if key is None or stats is None:
        return None
    try:
        text = _tree_entry(directory, tree, kind).read_text(encoding="utf-8")
        kept, _, _, facts = _fields(text)  # the token covers the kind, the path and the facts
    except (OSError, UnicodeError, ValueError):
        return None
    token = _tree_token(key, tree, kind, stats, facts)
    return facts if hmac.compare_digest(kept, token) else None


def remember_tree(tree: Path, kind: str, facts: str, stats: str | None) -> None:
    """Remember `facts` (one line) read of `tree` as `kind`, when it is still as `stats` found
    it before they were read (else what was read may not be what is there: nothing is kept),
    and nothing below it changed in the last `_SETTLED_S` (a rewrite within the same tick of
    the clock that stamps change times would leave them as they were). The first time a
    process remembers a tree, entries whose tree is gone are dropped."""
    directory = cache_dir()
    key = _key(directory)
    if key is None or stats is None or "\n" in facts or tree_digest(tree) != stats:
        return
    if not _settled(Path(os.path.realpath(tree))):
        return
    try:
        entry = _tree_entry(directory, tree, kind)
        entry.parent.mkdir(exist_ok=True, mode=0o700)
        path = os.fsencode(os.path.realpath(tree)).hex()
        token = _tree_token(key, tree, kind, stats, facts)
        _write_private(entry, f"{token}\n{kind}\n{path}\n{facts}")
    except (OSError, UnicodeError, ValueError):
        return  # not remembered: the next run reads it again
    if directory not in _pruned_trees:
        _pruned_trees.add(directory)
        _prune_trees(directory / TREES)


def _settled(tree: Path) -> bool:
    """Whether no entry below `tree` changed in the last `_SETTLED_S` (nor can be looked at)."""
    since = time.time() - _SETTLED_S
    try:
        for directory, names, files in os.walk(tree):
            for name in (".", *names, *files):
                if os.lstat(os.path.join(directory, name)).st_ctime > since:
                    return False
    except OSError:
        return False
    return True


def _tree_token(key: bytes, tree: Path, kind: str, stats: str, facts: str) -> str:
    message = "\0".join((FORMAT, TREES, kind, os.path.realpath(tree), stats, facts))
    return hmac.new(key, message.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()


def _tree_entry(directory: Path, tree: Path, kind: str) -> Path:
    name = hashlib.sha256(kind.encode() + b"\0" + os.fsencode(os.path.realpath(tree)))
    return directory / TREES / name.hexdigest()


def _prune_trees(trees: Path) -> None:
    """Drop the tree entries whose tree is gone, and staged entries a stopped run left."""
    try:
        names = os.listdir(trees)
    except OSError:
        return
    for name in names:
        if _stale(trees / name, of_result=False):
            with contextlib.suppress(OSError):
                (trees / name).unlink()
