"""Gemini CLI's eager copy: its own bundle, with every module factory compiled with its chunk.

Gemini CLI ships as an esbuild bundle; V8 compiles each module factory in it only when it is
first called, after Node's compile cache was made, so every subject compiled again each factory
its start runs. Subjects run from a copy whose factories are parenthesised function expressions,
compiled with their chunk and kept by the cache (`hosts/factories.py`: the change and its
proof). Only the chunks `bundle/gemini.js` imports are changed.

The copy is built on first use into the operator's cache directory, once per key (the version,
where Gemini CLI is installed and what its files hold, esbuild's version, this form), into a
temporary directory renamed into place, under a lock. Before it is kept, the pinned esbuild
proves the change, and the copy must answer `--version` as Gemini CLI does. Every file's SHA-256
is kept in the copy's manifest, checked by the controller before the copy is used (a worker
checks the manifest's digest and the files' sizes); `run.json` records the digest.

The copy sits in a package directory of its own (`<home>/pkg`), its `package.json` copied and a
`node_modules` link to the directory holding the installed package. Where that directory is not
the only `node_modules` Node finds from the installed bundle (one of its own, or one above it),
no copy is made: the copy would not find its optional dependencies (`node-pty`, `keytar`) where
Gemini CLI does.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...evidence.store import sha256_file
from ..binaries import PINNED_ESBUILD, esbuild_version
from ..factories import FactoryError, eager_chunks, prove
from ..staged import (
    build_once,
    cache_dir,
    digest,
    read_once_per_change,
    used,
    version_failure,
    write_manifest,
)

PACKAGE_NAME = "@google/gemini-cli"
ENTRY = Path("bundle") / "gemini.js"
MANIFEST = "eager.json"
FORM = 1  # part of the key: raise it when the transform changes
# A chunk's imports of its sibling chunks.
_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s*)["']\./([^"'\s]+\.js)["']""")


class EagerError(FactoryError):
    """Gemini CLI's eager copy could not be built, or does not match its manifest."""


@dataclass(frozen=True, slots=True)
class EagerCopy:
    """A built, checked copy: its entry (`bundle/gemini.js`) and the digest of its files."""

    entry: Path
    sha256: str


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/pytest-skill-eval/gemini-eager`, else under `~/.cache`."""
    return cache_dir("gemini-eager")


def package_of(entry: Path) -> Path | None:
    """The installed `@google/gemini-cli` package whose `bundle/gemini.js` is `entry`."""
    package = entry.resolve().parents[1]
    try:
        manifest = json.loads((package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if entry.resolve() != package / ENTRY or manifest.get("name") != PACKAGE_NAME:
        return None
    return package


def eager_copy(entry: Path, version: str, *, esbuild: Path, node: Path) -> EagerCopy:
    """The checked eager copy of the Gemini CLI whose entry is `entry`, built on first use (its
    changes proven by the pinned `esbuild`, its start by `node`)."""
    package = package_of(entry)
    if package is None:
        raise EagerError(f"{entry} is not the entry of an installed {PACKAGE_NAME}")
    _one_lookup(package / "bundle", package.parents[1])
    found = esbuild_version(esbuild)
    if found != PINNED_ESBUILD:
        raise EagerError(f"{esbuild} is esbuild {found}, not the pinned {PINNED_ESBUILD}")
    key = {
        "gemini-cli": version,
        "package": str(package),
        "installed": _fingerprint(package),
        "esbuild": found,
        "form": str(FORM),
    }
    home = cache_root() / f"gemini-{version}-{digest(key)[:20]}"
    build_once(home, lambda staging: _build(package, key, staging, esbuild, node))
    used(home)
    return checked_copy(home)


def reachable(bundle: Path, entry: str = ENTRY.name) -> list[str]:
    """The bundle's chunks `entry` imports, statically or by a literal `import("./…")`, and
    the chunks they import in turn (the other entry points' chunks are copied unchanged)."""
    found, todo = set(), [entry]
    while todo:
        name = todo.pop()
        if name in found or not (bundle / name).is_file():
            continue
        found.add(name)
        text = (bundle / name).read_text(encoding="utf-8")
        todo += [m.group(1) for m in _IMPORT.finditer(text) if "/" not in m.group(1)]
    return sorted(found)


@functools.cache
def checked_copy(home: Path, *, hashed: bool = True) -> EagerCopy:
    """The copy in `home` once every file matches its manifest: by SHA-256, or (`hashed`
    False, in a worker, after the controller hashed them) by size; and once its `node_modules`
    is still the link it was built with, the only place Node looks for its dependencies."""
    again = f"delete {home} to build it again"
    try:
        manifest = json.loads((home / MANIFEST).read_text(encoding="utf-8"))
        files: dict[str, list[Any]] = manifest["files"]
        modules = str(manifest["modules"])
        if not all(_entry_shape(value) for value in files.values()):
            raise TypeError("a file's entry is not [size, sha256]")
        found = set(_files(home / "pkg"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise EagerError(f"{home}: the copy's manifest cannot be read ({error}); {again}") from None
    link = home / "pkg" / "node_modules"
    if not link.is_symlink() or os.readlink(link) != modules:
        raise EagerError(f"{link} is not the link to {modules} it was built with; {again}")
    _one_lookup(home / "pkg" / "bundle", link)
    if found != set(files):
        raise EagerError(f"{home / 'pkg'}: its files differ from {home / MANIFEST}; {again}")

    def check(hashing: bool) -> str:
        for name, (size, sha256) in sorted(files.items()):
            path = home / "pkg" / name
            if path.stat().st_size != size or (hashing and sha256_file(path) != sha256):
                raise EagerError(f"{path} does not match {home / MANIFEST}; {again}")
        return digest(files)

    if hashed:
        # Hashed again only once a file of the copy changed: `pkg`, as `used` touches `home`.
        checked = read_once_per_change(home / "pkg", "gemini-eager", lambda: check(True))
    else:
        checked = check(False)
    if checked != manifest.get("sha256"):
        raise EagerError(f"{home / MANIFEST}: its digest does not match its files; {again}")
    return EagerCopy(home / "pkg" / ENTRY, manifest["sha256"])


def _entry_shape(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], int)
        and isinstance(value[1], str)
    )


def _module_dirs(start: Path) -> list[Path]:
    """Where Node looks for a package required from a module in `start`, in order: the
    `node_modules` of `start` and of each directory above it (none inside a `node_modules`)."""
    return [d / "node_modules" for d in (start, *start.parents) if d.name != "node_modules"]


def _one_lookup(start: Path, expected: Path) -> None:
    """EagerError unless `expected` is the only `node_modules` Node can find from `start`: a
    copy elsewhere looks only there, so it finds every dependency where Gemini CLI does."""
    found = [directory for directory in _module_dirs(start) if os.path.lexists(directory)]
    if found != [expected]:
        where = ", ".join(str(directory) for directory in found) or "nowhere"
        raise EagerError(
            f"Node finds modules for {start} in {where}, not in {expected} alone: a copy "
            "would not find the same ones"
        )


def describe(copy: EagerCopy | None) -> dict[str, str]:
    """What `run.json` records about the form of Gemini CLI that ran."""
    return {"kind": "stock"} if copy is None else {"kind": "eager", "sha256": copy.sha256}


def _files(root: Path) -> Iterable[str]:
    """Every regular file under `root` (not through its `node_modules` link), relative."""
    for directory, names, files in os.walk(root):
        names[:] = [n for n in names if not (directory == str(root) and n == "node_modules")]
        for name in files:
            yield os.path.relpath(os.path.join(directory, name), root)


def _fingerprint(package: Path) -> str:
    """What the installed files hold (each one's name and SHA-256): a package changed in place
    (patched, or another build of the version) gets a copy of its own, a reinstall the same.
    Hashed again only once a file of the package changed (`staged.read_once_per_change`)."""

    def hashed() -> str:
        names = sorted(_files(package))
        listed = [[n, sha256_file(package / n)] for n in names]
        return hashlib.sha256(json.dumps(listed).encode()).hexdigest()

    return read_once_per_change(package, "gemini-installed", hashed)


def _build(package: Path, key: dict[str, str], staging: Path, esbuild: Path, node: Path) -> None:
    """Copy, change and prove the copy, and write its manifest, in `staging`."""
    copy = staging / "pkg"
    shutil.copytree(package / "bundle", copy / "bundle", symlinks=True)
    shutil.copy2(package / "package.json", copy / "package.json")
    changed = eager_chunks(copy / "bundle", reachable(copy / "bundle"))
    if not changed:
        raise EagerError(f"{package / 'bundle'} has no module factories to compile early")
    prove(esbuild, package / "bundle", copy / "bundle", changed, staging / "printed")
    modules = package.parents[1]
    (copy / "node_modules").symlink_to(modules)
    _one_lookup(copy / "bundle", copy / "node_modules")
    _starts(node, copy / ENTRY, key["gemini-cli"], staging)
    files = {
        name: [(copy / name).stat().st_size, sha256_file(copy / name)] for name in _files(copy)
    }
    manifest = {"key": key, "changed": changed, "modules": str(modules), "files": files}
    write_manifest(staging / MANIFEST, {**manifest, "sha256": digest(files)})


def _starts(node: Path, entry: Path, version: str, staging: Path) -> None:
    """The copy starts and answers `--version` with Gemini CLI's version."""
    env = {"GEMINI_CLI_HOME": str(staging / "home"), "GEMINI_CLI_NO_RELAUNCH": "true"}
    argv = [str(node), str(entry), "--version"]
    failure = version_failure(argv, staging, env, lambda out, err: out.strip() == version)
    if failure is not None:
        raise EagerError(f"the copy does not start like Gemini CLI {version}: {failure}")
