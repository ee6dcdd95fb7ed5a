"""What a host's own skill loader warned of the declared skills, kept as evidence.

A host that reports its loader's warnings (Pi: its `skill_warnings.mjs` extension) writes them
to `<home>/skill-warnings.json` as `{"warnings": [{type, path, message}]}`; once the run is
over they are written, each named by the declared skill its path lies in and redacted, to the
variant's `skill-warnings.json` (`evidence/layout.py`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..evidence import EvidenceError, layout, write_json_once
from ..evidence.redact import Redactor, Tally
from ..evidence.skill_records import SkillWarning, SkillWarningsRecord
from ..workspace import ResourceSnapshot


def host_warnings(home: Path) -> list[Mapping[str, Any]] | None:
    """The warnings the host left in its home (None: it left none: it reports nothing)."""
    try:
        raw = json.loads((home / layout.SKILL_WARNINGS).read_text("utf-8"))
    except FileNotFoundError:
        return None
    warnings = raw.get("warnings") if isinstance(raw, dict) else None
    if not isinstance(warnings, list):
        raise ValueError(f"{layout.SKILL_WARNINGS} holds no list of warnings")
    return [w for w in warnings if isinstance(w, dict)]


def named(warning: Mapping[str, Any], skills: Sequence[ResourceSnapshot]) -> SkillWarning:
    """One warning, named by the declared skill whose snapshot its path lies in."""
    path = warning.get("path")
    index = None
    if isinstance(path, str):
        real = os.path.realpath(path)
        index = next(
            (i for i, s in enumerate(skills) if real.startswith(str(s.path) + os.sep)), None
        )
    return {
        "skill": skills[index].declared_path if index is not None else None,
        "index": index,
        "type": str(warning.get("type") or "warning"),
        "message": str(warning.get("message") or ""),
    }


def keep_skill_warnings(
    home: Path,
    host: str,
    skills: Sequence[ResourceSnapshot],
    directory: Path,
    redactor: Redactor,
    tally: Tally,
) -> list[str]:
    """Write what the host warned of into `directory` (nothing when it reports nothing); why
    that failed, for the run's error."""
    try:
        found = host_warnings(home)
        if found is None:
            return []
        warnings = [named(w, skills) for w in found]
        record: SkillWarningsRecord = {"host": host, "warnings": warnings}
        value, counts = redactor.redact_value(record)
        tally.add(layout.SKILL_WARNINGS, counts)
        write_json_once(directory / layout.SKILL_WARNINGS, value)
    except (OSError, ValueError, EvidenceError) as failure:
        return [f"could not keep the host's skill warnings: {failure}"]
    return []
