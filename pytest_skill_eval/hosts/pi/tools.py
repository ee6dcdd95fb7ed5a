"""A script's neutral tool calls on Pi: its own tools carry the neutral names."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ...modelserver.script import ToolCall


def render(call: ToolCall, skill: str | None, workspace: Path | None) -> list[ToolCall]:
    """A neutral call on Pi: itself, but `skill` becomes a `read` of its SKILL.md."""
    if skill is None:
        return [call]
    return [dataclasses.replace(call, name="read", arguments={"path": skill})]
