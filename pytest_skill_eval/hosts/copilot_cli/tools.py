"""A script's neutral tool calls written as Copilot CLI's own tools (its tool dialect).

Copilot CLI's file tools take absolute paths: `view {path, view_range}` (`offset` and `limit`
as its first and last line), `create {path, file_text}` and
`edit {path, old_str, new_str}` (one replacement per call); a relative neutral path is resolved
against the workspace. `skill {name}` is its own `skill {skill}`; `run_command` is the
evaluator's MCP tool. Any other call (a host-native one) passes through unchanged.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ...modelserver.script import ToolCall
from ..dialect import neutral_edits
from .registration import RUN_COMMAND


def _absolute(path: str, workspace: Path | None) -> str:
    if workspace is None or Path(path).is_absolute():
        return path
    return str(workspace / path)


def render(call: ToolCall, skill: str | None, workspace: Path | None) -> list[ToolCall]:
    """`call` as the Copilot CLI call(s) that do the same (`skill` is not needed: Copilot CLI
    has its own skill tool)."""
    args: dict[str, Any] = dict(call.arguments)
    path = args.pop("path", None)
    if call.name == "read" and isinstance(path, str):
        arguments: dict[str, Any] = {"path": _absolute(path, workspace)}
        offset, limit = args.get("offset"), args.get("limit")
        if isinstance(offset, int) or isinstance(limit, int):
            start = offset if isinstance(offset, int) else 1
            arguments["view_range"] = [start, start + limit - 1 if isinstance(limit, int) else -1]
        return [dataclasses.replace(call, name="view", arguments=arguments)]
    if call.name == "write" and isinstance(path, str):
        content = {"path": _absolute(path, workspace), "file_text": args.get("content", "")}
        return [dataclasses.replace(call, name="create", arguments=content)]
    if call.name == "edit" and isinstance(path, str):
        where = _absolute(path, workspace)
        return [
            dataclasses.replace(call, arguments={"path": where, "old_str": o, "new_str": n})
            for o, n in neutral_edits(args)
        ]
    if call.name == "skill" and isinstance(args.get("name"), str):
        return [dataclasses.replace(call, arguments={"skill": args["name"]})]
    if call.name == "run_command":
        return [dataclasses.replace(call, name=RUN_COMMAND)]
    return [call]
