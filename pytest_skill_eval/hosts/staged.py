"""What the evaluator keeps in the operator's cache (`$XDG_CACHE_HOME/pytest-skill-eval`, else
under `~/.cache`): Node's compile caches, Pi's bundle, Gemini CLI's eager copy. A directory is
built once, in a temporary directory beside it renamed into place when complete, so builders
racing for it keep one complete copy; its manifest records a digest of its files' entries."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


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


def write_manifest(path: Path, manifest: Mapping[str, Any]) -> None:
    """The built directory's manifest, as JSON."""
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def digest(files: Mapping[str, Any]) -> str:
    """The digest a manifest records of its files' entries (name → hash, or more)."""
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
