"""Node's compile cache for hosts that run on Node: cheaper start-ups, shared by version.

Node ≥ 22.1 keeps the V8 code it compiled for a module in `NODE_COMPILE_CACHE` and reuses it
on the next start, which cuts a CLI's start-up CPU (Pi on Node 22: 1.61 s with a warm cache
against 2.12 s on Node 20). The cache lives in the operator's cache directory, one directory per
host version and Node version, never in a subject's isolated home or under a result; older
Node ignores the variable, so it is only set where it helps. Node checks each entry against
the source it was compiled from, so a stale entry is recompiled, not used.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

ENV = "NODE_COMPILE_CACHE"
MINIMUM = (22, 1)
_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)")


@functools.cache
def node_version(path_env: str) -> tuple[int, int, int] | None:
    """The version of the `node` found on `path_env` (once per process), or None."""
    node = shutil.which("node", path=path_env)
    if node is None:
        return None
    try:
        done = subprocess.run(
            [node, "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": path_env},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION.match(done.stdout.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    """`$XDG_CACHE_HOME/pytest-skill-eval/node-compile-cache`, else under `~/.cache`."""
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-skill-eval" / "node-compile-cache"


def compile_cache_env(host: str, host_version: str, path_env: str) -> dict[str, str]:
    """`{NODE_COMPILE_CACHE: dir}` when the host's Node keeps a compile cache, else nothing."""
    version = node_version(path_env)
    if version is None or version[:2] < MINIMUM:
        return {}
    node = ".".join(map(str, version))
    directory = cache_root() / f"{host}-{host_version}-node-{node}"
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return {}  # no cache is only slower
    return {ENV: str(directory)}
