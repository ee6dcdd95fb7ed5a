"""Paths of the Pi extensions the evaluator loads (shipped as package data)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["COMMAND_TOOL", "GUARD", "OBSERVER", "SKILL_WARNINGS"]

_HERE = Path(__file__).resolve().parent

#: Tool and path guard plus the isolated/host system prompt; always loaded first.
GUARD: Path = _HERE / "guard.mjs"
#: The `run_command` tool for declared commands; loaded when a group declares commands.
COMMAND_TOOL: Path = _HERE / "command_tool.mjs"
#: Non-mutating context observer; loaded last when a group has context-text expectations.
OBSERVER: Path = _HERE / "observer.mjs"
#: What Pi's skill loader warns of the declared skills; loaded when a variant declares skills.
SKILL_WARNINGS: Path = _HERE / "skill_warnings.mjs"
