"""A script's neutral tool calls written as opencode's own tools (its tool dialect).

opencode's file tools carry the neutral names but not the neutral arguments: `read`, `write`
and `edit` take `filePath` (relative paths resolve against the workspace), `edit` one
`oldString`/`newString` replacement per call, and the evaluator's MCP tool of declared commands
is `skill-eval_run_command`. `skill {name}` is opencode's own `skill` tool as it is. Any other
call (a host-native one) passes through unchanged.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ...modelserver.script import ToolCall
from ..dialect import neutral_edits
from .registration import RUN_COMMAND


def render(call: ToolCall, skill: str | None, workspace: Path | None) -> list[ToolCall]:
    """`call` as the opencode call(s) that do the same (`skill` and `workspace` are not needed:
    opencode has its own skill tool, and resolves relative paths against the workspace)."""
    args: dict[str, Any] = dict(call.arguments)
    path = args.pop("path", None)
    if call.name in ("read", "write") and isinstance(path, str):
        return [dataclasses.replace(call, arguments={"filePath": path, **args})]
    if call.name == "edit" and isinstance(path, str):
        return [
            dataclasses.replace(call, arguments={"filePath": path, "oldString": o, "newString": n})
            for o, n in neutral_edits(args)
        ]
    if call.name == "run_command":
        return [dataclasses.replace(call, name=RUN_COMMAND)]
    return [call]
