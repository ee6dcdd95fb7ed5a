"""A script's neutral tool calls written as Claude Code's own tools and argument names; a
declared command is the evaluator's MCP tool."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ...modelserver.script import ToolCall
from ..dialect import neutral_edits
from .registration import RUN_COMMAND


def render(call: ToolCall, skill: str | None, workspace: Path | None) -> list[ToolCall]:
    """A neutral call as Claude Code's tools and argument names."""
    args = dict(call.arguments)
    path = args.pop("path", None)
    if call.name == "read" and isinstance(path, str):
        return [dataclasses.replace(call, name="Read", arguments={"file_path": path, **args})]
    if call.name == "write" and isinstance(path, str):
        return [dataclasses.replace(call, name="Write", arguments={"file_path": path, **args})]
    if call.name == "edit" and isinstance(path, str):
        return [
            dataclasses.replace(
                call,
                name="Edit",
                arguments={"file_path": path, "old_string": old, "new_string": new},
            )
            for old, new in neutral_edits(args)
        ]
    if call.name == "skill" and isinstance(args.get("name"), str):
        return [dataclasses.replace(call, name="Skill", arguments={"skill": args["name"]})]
    if call.name == "run_command":
        return [dataclasses.replace(call, name=RUN_COMMAND)]
    return [call]
