"""Definitions lying in a directory: what pytest without `--skill-eval` may have meant to run."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

# A definition is small; a larger JSON file is not read to find out.
_MAX_BYTES = 1 << 20


def definitions_in(directory: Path) -> list[Path]:
    """The suite and group definitions directly in `directory` (no recursion), suites first."""
    found: list[tuple[int, str, Path]] = []
    try:
        candidates = sorted(directory.glob("*.json"))
    except OSError:
        return []
    for path in candidates:
        try:
            if not path.is_file() or path.stat().st_size > _MAX_BYTES:
                continue
            document = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            continue
        kind = document.get("kind") if isinstance(document, dict) else None
        if kind in ("suite", "group"):
            found.append((0 if kind == "suite" else 1, path.name, path))
    return [path for _, _, path in sorted(found)]


def not_enabled_hint(directory: Path, ini_keys: Iterable[str], ini_path: Path | None) -> str | None:
    """With the plugin off: one line naming how to turn it on, when `directory` (where pytest
    was invoked) holds definitions or the ini file sets skill_eval_* keys; else None."""
    found = definitions_in(directory)
    if found:
        name = found[0].name
        return f"skill-eval: nothing evaluated; to evaluate {name}, run: pytest --skill-eval {name}"
    keys = sorted(key for key in ini_keys if key.startswith("skill_eval_"))
    if keys:
        return (
            f"skill-eval: nothing evaluated: {ini_path} sets {keys[0]} but names no "
            "definitions; run pytest --skill-eval <file>, or set skill_eval_definitions"
        )
    return None
