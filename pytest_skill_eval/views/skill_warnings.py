"""What a host's own skill loader warned of a variant's skills, one line each, for the text
view and the terminal (`evidence/layout.py`'s `skill-warnings.json`)."""

from __future__ import annotations

from pathlib import Path

from ..evidence.read import skill_warnings


def skill_warning_lines(variant_dir: Path) -> list[str]:
    """`<host>: <declared skill>: <the host's words>` for each warning it kept."""
    record = skill_warnings(variant_dir)
    if record is None:
        return []
    host = record["host"]
    return [f"{host}: {w['skill'] or 'a skill'}: {w['message']}" for w in record["warnings"]]
