"""What the evaluator keeps in the operator's cache (`$XDG_CACHE_HOME/pytest-skill-eval`, else
under `~/.cache`): Node's compile caches, Pi's bundle, Gemini CLI's eager copy. A directory is
built once, in a temporary directory beside it renamed into place when complete, so builders
racing for it keep one complete copy; its manifest records a digest of its files' entries.
Entries are built by one process at a time per family (`build_once`): the others wait for it and
use what it built, and a build that was killed leaves nothing the next one keeps. Each use marks
an entry (`used`); one no run has used for `UNUSED_DAYS` is removed when its family builds
another (`prune`), so a cache that sees new versions, lockfiles and checkouts does not grow for
good. What a run reads of an entry (or of an installed host) by hashing every file is hashed
again only once a file below it changed (`read_once_per_change`)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..evidence.verified import recalled, remember_tree, tree_digest

# An entry of the operator's cache no run has used for this long is removed when its family
# builds another: rebuilding one costs seconds, keeping each forever costs up to 80 MB apiece.
UNUSED_DAYS = 30.0
# However recently used, a family keeps at most this many entries; an older one goes once no
# run has used it for `SPARE_DAYS` (no run lasts that long, so none is removed under a run).
MOST_KEPT = 8
SPARE_DAYS = 1.0


def cache_dir(name: str, environ: Mapping[str, str] = os.environ) -> Path:
    """`$XDG_CACHE_HOME/pytest-skill-eval/<name>`, else under `~/.cache`."""
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-skill-eval" / name


@contextlib.contextmanager
def staged(home: Path) -> Iterator[Path]:
    """A temporary directory beside `home` to build in: renamed to `home` when the block ends
    without an error (where a racing builder renamed its own first, that one is kept), removed
    in any case."""
    home.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    staging = Path(tempfile.mkdtemp(prefix=f".{home.name}.", dir=home.parent))
    try:
        yield staging
        try:
            staging.rename(home)
        except OSError:
            if not home.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# The lock a family's builders and pruners take, in the family's directory; never removed.
LOCK = ".lock"
# Hidden leftovers (a killed build's staging, a killed removal's remains, an older version's lock
# files) older than this are swept when the family builds: no build takes this long.
LEFTOVER_DAYS = 1.0


def build_once(home: Path, build: Callable[[Path], None]) -> None:
    """Unless `home` is there, `build(staging)` its contents and rename them into place, under
    its family's lock (`home.parent / LOCK`): one builder at a time, machine-wide; a waiter that
    finds `home` built uses it. A killed build's staging is removed first; the family is
    pruned after, still under the lock."""
    if home.is_dir():
        return
    with _family_locked(home):
        if home.is_dir():
            return
        for left in home.parent.glob(f".{home.name}.*"):  # a killed build's staging
            _delete(left)
        try:
            with staged(home) as staging:
                build(staging)
        finally:
            prune(home.parent, keep=home)


def used(home: Path) -> None:
    """Mark `home` as used now (its modification time), so `prune` keeps it."""
    with contextlib.suppress(OSError):
        os.utime(home)


def used_and_pruned(home: Path) -> None:
    """Mark `home` used, and prune its family under the family's lock: for an entry its host
    writes itself (Copilot CLI's unpacked package), which no `build_once` prunes beside."""
    used(home)
    with contextlib.suppress(OSError), _family_locked(home):
        prune(home.parent, keep=home)


@contextlib.contextmanager
def _family_locked(home: Path) -> Iterator[None]:
    """Hold the lock of `home`'s family (`home.parent / LOCK`, the family made on first use):
    one builder or pruner at a time, machine-wide."""
    home.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with (home.parent / LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def prune(family: Path, *, keep: Path, days: float = UNUSED_DAYS) -> list[Path]:
    """With the family's lock held: remove its entries (directories, never a link) that no run
    has used for `days`, or for `SPARE_DAYS` beyond the `MOST_KEPT` used last (`keep`, the one
    just built or used, among them), and its hidden leftovers older than `LEFTOVER_DAYS`; the
    entries removed.

    An entry is renamed to a hidden name before it is deleted, so a run about to use it finds
    it whole or not at all (and builds it again); a removal killed halfway is a leftover."""
    now = time.time()
    try:
        names = sorted(entry.name for entry in family.iterdir())
    except OSError:
        return []
    entries: list[tuple[float, Path]] = []
    for name in names:
        path = family / name
        if name == LOCK or path == keep:
            continue
        if name.startswith("."):
            if _before(path, now - LEFTOVER_DAYS * 86400, directory=False):
                _delete(path)
        elif (last := _changed_at(path, directory=True)) is not None:
            entries.append((last, path))
    removed: list[Path] = []
    # Newest first: the first `MOST_KEPT - 1` stay `days`, the rest `SPARE_DAYS`.
    for rank, (_, path) in enumerate(sorted(entries, key=lambda one: -one[0])):
        unused = days if rank < MOST_KEPT - 1 else min(days, SPARE_DAYS)
        if _remove(path, now - unused * 86400):
            removed.append(path)
    return removed


def _changed_at(entry: Path, *, directory: bool) -> float | None:
    """When `entry` itself (never what a link names) last changed, an entry's last use
    (`used`); None where it is gone, or is not a directory and `directory` asks for one."""
    try:
        found = entry.lstat()
    except OSError:
        return None
    return None if directory and not stat.S_ISDIR(found.st_mode) else found.st_mtime


def _before(entry: Path, cutoff: float, *, directory: bool = True) -> bool:
    """Whether `entry` last changed before `cutoff` (`_changed_at`)."""
    changed = _changed_at(entry, directory=directory)
    return changed is not None and changed < cutoff


def _remove(entry: Path, cutoff: float) -> bool:
    """Rename `entry` aside and delete it, when it is still unused since `cutoff` (a run may
    have marked it since it was looked at)."""
    if not _before(entry, cutoff):
        return False
    try:
        doomed = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=entry.parent))
    except OSError:
        return False
    try:
        if not _before(entry, cutoff):  # a run marked it meanwhile
            return False
        entry.rename(doomed / entry.name)
        return True
    except OSError:
        return False
    finally:
        shutil.rmtree(doomed, ignore_errors=True)


def _delete(leftover: Path) -> None:
    """A hidden leftover: a directory tree (never through a link) or a file."""
    if leftover.is_dir() and not leftover.is_symlink():
        shutil.rmtree(leftover, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            leftover.unlink()


def version_failure(
    argv: list[str], staging: Path, env: Mapping[str, str], answered: Callable[[str, str], bool]
) -> str | None:
    """Why `argv`, started in a fresh home under `staging` with `env` (and `PATH`, `HOME`), did
    not exit 0 with output `answered(stdout, stderr)` accepts; None when it did. The home is
    removed when it did."""
    (home := staging / "home").mkdir()
    full = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home), **env}
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=120, env=full, cwd=home,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as failure:
        return str(failure)
    if done.returncode != 0 or not answered(done.stdout, done.stderr):
        return ((done.stderr or done.stdout).strip().splitlines() or ["no output"])[0][:200]
    shutil.rmtree(home)
    return None


def write_manifest(path: Path, manifest: Mapping[str, Any]) -> None:
    """The built directory's manifest, as JSON."""
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def digest(files: Mapping[str, Any]) -> str:
    """The digest a manifest records of its files' entries (name → hash, or more)."""
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def read_once_per_change(tree: Path, kind: str, read: Callable[[], str]) -> str:
    """`read()` of `tree` (a digest of its files, found by hashing them), or what it returned
    before when not one entry below `tree` has changed since (`evidence.verified.recalled`:
    each entry's `lstat`, and a link's target's `stat`, under a key only this user can read)
    and the module `read` is written in is as it was (another version may read it otherwise).
    What `read` raises is not remembered; `read` must not read through a link to a directory."""
    kind = f"{kind} {_written(read)}"
    stats = tree_digest(tree)
    known = recalled(tree, kind, stats)
    if known is not None:
        return known
    found = read()
    remember_tree(tree, kind, found, stats)
    return found


def _written(function: Callable[[], str]) -> str:
    """The size and modification time of the file `function` is written in, as it is now."""
    try:
        info = os.stat(function.__code__.co_filename)
    except (AttributeError, OSError):
        return "?"
    return f"{info.st_size}:{info.st_mtime_ns}"
