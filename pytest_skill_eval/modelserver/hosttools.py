"""One script for every host: neutral tool calls rendered as the tools the request offers.

A script speaks Pi's neutral vocabulary (`read {path}`, `write {path, content}`, `edit {path,
edits|oldText/newText}`) plus `skill {name}`, a neutral way to activate a skill. When the request
comes from Claude Code (it offers `Read`/`Write`/`Edit`/`Skill`, not `read`), each call is
rendered as Claude Code's tool and argument names (`run_command {command}` as the evaluator's
MCP tool); on Pi, `skill` becomes a `read` of that skill's
SKILL.md. Any other call (a host-native one) passes through unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .script import ScriptedResponse, ToolCall

CLAUDE_CODE = "claude-code"
PI = "pi"
# Declared commands reach Claude Code through the evaluator's MCP server `skill-eval`.
CLAUDE_CODE_RUN_COMMAND = "mcp__skill-eval__run_command"
_CLAUDE_TOOLS = ("Read", "Write", "Edit", "Skill", CLAUDE_CODE_RUN_COMMAND)


def offered_tools(body: Mapping[str, Any]) -> set[str]:
    """The tool names a request offers (Anthropic `name`, OpenAI `function.name`)."""
    names: set[str] = set()
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str):
            names.add(name)
    return names


def requesting_host(body: Mapping[str, Any]) -> str:
    """Which tool vocabulary the request speaks: Claude Code's, or Pi's (the neutral one)."""
    offered = offered_tools(body)
    if offered & set(_CLAUDE_TOOLS) and "read" not in offered:
        return CLAUDE_CODE
    return PI


def render_for_host(
    response: ScriptedResponse, host: str, placeholders: Mapping[str, str]
) -> ScriptedResponse:
    """`response` with its neutral tool calls written in `host`'s own tools."""
    if not response.tool_calls:
        return response
    calls: list[ToolCall] = []
    for call in response.tool_calls:
        rendered = _claude_code(call) if host == CLAUDE_CODE else _pi(call, placeholders)
        calls += rendered
    if len(calls) != len(response.tool_calls):
        # One neutral call became several: each needs its own id.
        calls = [dataclasses.replace(c, id=None) if c.id is not None else c for c in calls]
    return dataclasses.replace(response, tool_calls=tuple(calls))


def _claude_code(call: ToolCall) -> list[ToolCall]:
    args = dict(call.arguments)
    path = args.pop("path", None)
    if call.name == "read" and isinstance(path, str):
        return [dataclasses.replace(call, name="Read", arguments={"file_path": path, **args})]
    if call.name == "write" and isinstance(path, str):
        return [dataclasses.replace(call, name="Write", arguments={"file_path": path, **args})]
    if call.name == "edit" and isinstance(path, str):
        edits = args.get("edits")
        if not isinstance(edits, list):
            edits = [{"oldText": args.get("oldText"), "newText": args.get("newText")}]
        return [
            dataclasses.replace(
                call,
                name="Edit",
                arguments={
                    "file_path": path,
                    "old_string": edit.get("oldText") if isinstance(edit, dict) else None,
                    "new_string": edit.get("newText") if isinstance(edit, dict) else None,
                },
            )
            for edit in edits
        ]
    if call.name == "skill" and isinstance(args.get("name"), str):
        return [dataclasses.replace(call, name="Skill", arguments={"skill": args["name"]})]
    if call.name == "run_command":
        return [dataclasses.replace(call, name=CLAUDE_CODE_RUN_COMMAND)]
    return [call]


def _pi(call: ToolCall, placeholders: Mapping[str, str]) -> list[ToolCall]:
    name = call.arguments.get("name")
    if call.name != "skill" or not isinstance(name, str):
        return [call]
    for key, directory in placeholders.items():
        if key.startswith("skill:") and skill_name(Path(directory)) == name:
            path = str(Path(directory) / "SKILL.md")
            return [dataclasses.replace(call, name="read", arguments={"path": path})]
    return [call]


def skill_name(directory: Path) -> str:
    """The frontmatter `name:` of a skill directory's SKILL.md, else the directory name."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        lines = (directory / "SKILL.md").read_text(encoding="utf-8").splitlines()
        if lines and lines[0].strip() == "---":
            for line in lines[1:]:
                if line.strip() == "---":
                    break
                key, _, value = line.partition(":")
                if key.strip() == "name" and value.strip():
                    return value.strip().strip("\"'")
    return directory.name
