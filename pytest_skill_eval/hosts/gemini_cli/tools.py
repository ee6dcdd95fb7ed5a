"""Neutral tool calls as Gemini CLI's own: `read_file`, `write_file`, `replace`,
`activate_skill`, and the evaluator's MCP tool for declared commands.

A neutral `read`'s `offset`/`limit` become the 1-based `start_line`/`end_line`; an `edit` with
several replacements becomes one `replace` per replacement, in order (each with the
`instruction` the tool asks for).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ...modelserver.script import ToolCall
from ..dialect import neutral_edits
from .registration import RUN_COMMAND


def render(call: ToolCall, skill: str | None, workspace: Path | None) -> list[ToolCall]:
    """`call` in Gemini CLI's tools (a `skill` is activated by name: `skill` is unused)."""
    args = dict(call.arguments)
    path = args.pop("path", None)
    if call.name == "read" and isinstance(path, str):
        return [dataclasses.replace(call, name="read_file", arguments=_lines(path, args))]
    if call.name == "write" and isinstance(path, str):
        arguments = {"file_path": path, **args}
        return [dataclasses.replace(call, name="write_file", arguments=arguments)]
    if call.name == "edit" and isinstance(path, str):
        return [_replace(call, path, old, new) for old, new in neutral_edits(args)]
    if call.name == "skill" and isinstance(args.get("name"), str):
        return [dataclasses.replace(call, name="activate_skill", arguments={"name": args["name"]})]
    if call.name == "run_command":
        return [dataclasses.replace(call, name=RUN_COMMAND)]
    return [call]


def _lines(path: str, args: dict[str, Any]) -> dict[str, Any]:
    arguments: dict[str, Any] = {"file_path": path}
    offset, limit = args.get("offset"), args.get("limit")
    first = offset if isinstance(offset, int) and offset > 0 else 1
    if first > 1:
        arguments["start_line"] = first
    if isinstance(limit, int) and limit > 0:
        arguments |= {"start_line": first, "end_line": first + limit - 1}
    return arguments


def _replace(call: ToolCall, path: str, old: Any, new: Any) -> ToolCall:
    arguments = {
        "file_path": path,
        "instruction": f"Replace the given text in {path}.",
        "old_string": old,
        "new_string": new,
    }
    return dataclasses.replace(call, name="replace", arguments=arguments)
