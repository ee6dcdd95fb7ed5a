"""Reading the files of a source: each failure is one line naming the file and what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .suite import SourceError


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SourceError(f"{path}: a directory, where a file is expected") from None
    except UnicodeDecodeError:
        raise SourceError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise SourceError(f"{path}: cannot read it ({error.strerror or error})") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise SourceError(
            f"{path}: not JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None


def read_yaml(path: Path, text: str | None = None) -> Any:
    try:
        return yaml.safe_load(read_text(path) if text is None else text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(error, "problem", None) or "malformed"
        raise SourceError(f"{path}: not YAML{where}: {problem}") from None


def frontmatter(path: Path) -> tuple[dict[str, Any], str]:
    """A Markdown file's YAML frontmatter (empty without one) and its body."""
    text = read_text(path)
    if not text.startswith("---"):
        return {}, text
    head, separator, body = text[3:].partition("\n---")
    if not separator:
        raise SourceError(f"{path}: its frontmatter has no closing ---")
    front = read_yaml(path, head) or {}
    if not isinstance(front, dict):
        raise SourceError(f"{path}: its frontmatter is not a mapping")
    return front, body.partition("\n")[2]
