"""A directory the evaluator builds once in the operator's cache: in a temporary directory beside
it, renamed into place when complete, so builders racing for it keep one complete copy (Pi's
bundle, Gemini CLI's eager copy)."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


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
