"""A variant's declared context as every host gives it to the model: read from the delivery
manifest the evaluator writes, and rendered in exactly the markup Pi's guard extension uses."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import HostError


def _escape_text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _escape_attribute(value: str) -> str:
    return _escape_text(value).replace('"', "&quot;").replace("'", "&apos;")


def load_context(manifest: str) -> list[Mapping[str, object]]:
    """The entries of the context delivery manifest (schema_version 1); none without one."""
    if not manifest:
        return []
    try:
        data = json.loads(Path(manifest).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise HostError(f"context manifest {manifest} cannot be read: {error}") from error
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise HostError(f"context manifest {manifest}: schema_version must be 1")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise HostError(f"context manifest {manifest}: entries must be an array")
    return [e for e in entries if isinstance(e, dict)]


def declared_context_block(entries: Sequence[Mapping[str, object]]) -> str:
    """The declared context, in exactly the markup Pi's guard gives the model."""
    lines = ["<declared_context>"]
    for entry in entries:
        lines.append(f'<context declared-path="{_escape_attribute(str(entry["declaredPath"]))}">')
        files = entry.get("files", [])
        for item in files if isinstance(files, list) else []:
            path, content = _escape_attribute(str(item["path"])), _escape_text(item["content"])
            lines.append(f'<file path="{path}">\n{content}</file>')
        lines.append("</context>")
    lines.append("</declared_context>")
    return "\n".join(lines)
