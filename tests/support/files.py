"""Writing small files and reading JSON back, for trees the tests build in tmp_path."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write(path: Path, content: str | bytes, *, mode: int | None = None) -> Path:
    """Create `path` (and its parents) with `content`; `mode` sets its permission bits."""
    __tracebackhide__ = True
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    if mode is not None:
        path.chmod(mode)
    return path


def read_json(path: Path) -> Any:
    """Parse a JSON file (evidence, definitions, aggregates)."""
    __tracebackhide__ = True
    return json.loads(path.read_text(encoding="utf-8"))


def tree_bytes(directory: Path) -> Iterable[tuple[Path, bytes]]:
    """Every regular file below `directory` with its bytes (symlinks are not followed)."""
    __tracebackhide__ = True
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.is_symlink():
            yield path, path.read_bytes()


def stand_in_pi(path: Path, version: str = "0.73.1", body: str = "") -> Path:
    """An executable that answers `--version` like Pi and runs `body` (sh) otherwise.

    For tests of what happens before or around a subject, so that they never start the real Pi.
    """
    __tracebackhide__ = True
    script = f'#!/bin/sh\nif [ "$1" = --version ]; then echo {version}; exit 0; fi\n{body}'
    return write(path, script, mode=0o755)
