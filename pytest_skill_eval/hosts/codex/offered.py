"""How Codex lists skills to the model: `- name: description (file: <root>/<name>/SKILL.md)`
under "### Available skills" in its `<skills_instructions>` developer message. A description it
cuts ends in `...`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...modelserver.bodies import request_context
from ..offered import Listed, line_catalog

HEADER = "### Available skills\n"
_FILE = re.compile(r" \(file: [^()]*\)$")


def catalog(body: Mapping[str, Any]) -> tuple[Listed, ...] | None:
    """The skills one request lists; None when it lists none."""
    listed = line_catalog(request_context(body).system_prompt, HEADER, "\n### ")
    if listed is None:
        return None
    return tuple(
        Listed(entry.name, _FILE.sub("", entry.description or "") or None) for entry in listed
    )
