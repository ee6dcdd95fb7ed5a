"""Node's compile cache for Node hosts: warmed by the evaluator, a private copy for each subject.

Node ≥ 22.1 keeps the V8 code it compiled for a module in `NODE_COMPILE_CACHE` and reuses it on
the next start, which cuts a Node CLI's start-up CPU. Node checks an entry against the source it
was compiled from, which catches a stale or corrupt entry but not a crafted one, so no subject
may write the cache another subject reads. The evaluator warms one cache per key (the runtime's
version and the host's entry) by starting the host once (`--version`: every static import is
compiled), built once under a lock in a temporary directory renamed into place (`staged`);
each subject then gets its own copy inside its isolated home, deleted with it. What a subject
writes there reaches nobody.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from .runtime import NodeRuntime
from .staged import build_once, cache_dir, used

ENV = "NODE_COMPILE_CACHE"
MINIMUM = (22, 1)
SUBJECT_DIR = "node-compile-cache"  # inside the subject's isolated home
_FAILED: set[Path] = set()  # the warm caches this process could not make


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    """`$XDG_CACHE_HOME/pytest-skill-eval/node-compile-cache`, else under `~/.cache`."""
    return cache_dir("node-compile-cache", environ)


def keeps_cache(runtime: NodeRuntime) -> bool:
    """Whether this Node keeps a compile cache (22.1 and later)."""
    try:
        major, minor = (int(part) for part in runtime.version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= MINIMUM


def warm_cache(label: str, runtime: NodeRuntime, command: Sequence[str]) -> Path | None:
    """The evaluator's warm cache for `command` (`<node> <entry>`) on `runtime`, made on first
    use; None where Node keeps none or it cannot be made (no cache is only slower)."""
    if not keeps_cache(runtime):
        return None
    key = hashlib.sha256("\0".join([runtime.version, *command]).encode()).hexdigest()[:16]
    warm = cache_root() / f"{label}-node-{runtime.version}-{key}"
    if warm in _FAILED:
        return None
    try:
        build_once(warm, lambda staging: _warm(command, staging))
    except (OSError, subprocess.SubprocessError):
        _FAILED.add(warm)  # tried once in this process: its next subjects start without one
        return None
    used(warm)
    return warm


def _warm(command: Sequence[str], staging: Path) -> None:
    """Node's compile cache of one `--version` start of `command`, written into `staging` (an
    empty cache is an error: that Node made none)."""
    with tempfile.TemporaryDirectory(prefix="skill-eval-warm-") as home:
        subprocess.run(
            [*command, "--version"],
            env={ENV: str(staging), "PATH": os.environ.get("PATH", os.defpath), "HOME": home},
            cwd=home,
            capture_output=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    if not any(staging.iterdir()):
        raise OSError(f"{command[0]} wrote no compile cache")


def subject_cache(warm: Path | None, home: Path) -> dict[str, str]:
    """`{NODE_COMPILE_CACHE: <a copy of warm in home>}`, else nothing."""
    if warm is None:
        return {}
    private = home / SUBJECT_DIR
    try:
        shutil.copytree(warm, private, symlinks=True)
    except (OSError, shutil.Error):
        shutil.rmtree(private, ignore_errors=True)
        return {}
    return {ENV: str(private)}
