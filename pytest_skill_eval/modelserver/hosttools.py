"""One script for every host: neutral tool calls rendered as the tools the request offers.

A script speaks Pi's neutral vocabulary (`read {path}`, `write {path, content}`, `edit {path,
edits|oldText/newText}`) plus `skill {name}`, a neutral way to activate a skill. When the request
comes from Claude Code (it offers `Read`/`Write`/`Edit`/`Skill`, not `read`), each call is
rendered as Claude Code's tool and argument names (`run_command {command}` as the evaluator's
MCP tool); on Pi, `skill` becomes a `read` of that skill's SKILL.md. Codex (it offers
`exec_command` and `apply_patch`) has no file tools: reads become a shell `cat`, writes and edits
one `apply_patch`, and `run_command` the evaluator's MCP tool in its namespace (see
`codextools`). Gemini CLI (a Gemini request's `functionDeclarations`) gets `read_file`,
`write_file`, `replace`, `activate_skill` and the MCP tool (see `geminitools`). Any other call
(a host-native one) passes through unchanged. Each host's renderer is the `ToolDialect.render`
its registration names, imported when a request from that host is answered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..common.entries import FileTooLargeError, read_inside
from ..hosts.claude_code.registration import RUN_COMMAND as CLAUDE_CODE_RUN_COMMAND
from ..hosts.registration import load
from ..hosts.registry import names, registered, registration_for
from ..nodeids import DEFAULT_HOST
from .gemini import function_names
from .script import ScriptedResponse, ToolCall

CLAUDE_CODE = "claude-code"
CODEX = "codex"
PI = "pi"
# A skill's SKILL.md is read for its frontmatter name: at most this many bytes.
SKILL_FILE_LIMIT = 1024 * 1024
__all__ = ["CLAUDE_CODE_RUN_COMMAND"]
# Writes one neutral call as a host's own calls: (call, the SKILL.md a `skill` call activates,
# the subject's workspace) → the host's calls.
Renderer = Callable[[ToolCall, str | None, Path | None], list[ToolCall]]


def offered_tools(body: Mapping[str, Any]) -> set[str]:
    """The tool names a request offers (Anthropic `name`, OpenAI `function.name`, Gemini
    `functionDeclarations[].name`)."""
    names: set[str] = function_names(body)
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
    """Which host's tool vocabulary the request speaks: the registered host that offers the
    most of the tools it is known by, the first registered of those that tie (none: the default
    host's, which is neutral). Hosts may share a tool name (Pi's `read` is another host's too):
    the host whose other tools are there as well is the one asking."""
    offered = offered_tools(body)
    chosen, matched = DEFAULT_HOST, 0
    for registration in registered():
        count = len(offered & set(registration.tools.offers))
        if count > matched:
            chosen, matched = registration.name, count
    return chosen


def render_for_host(
    response: ScriptedResponse,
    host: str,
    placeholders: Mapping[str, str],
    workspace: Path | None,
) -> ScriptedResponse:
    """`response` with its neutral tool calls written in `host`'s own tools.

    `workspace` is the subject's workspace: the only place a file named by the script is read
    from while rendering (None: no such file is read).
    """
    if not response.tool_calls:
        return response
    if host not in names():
        raise ValueError(f"unknown host {host!r}; expected one of {', '.join(names())}")
    render: Renderer = load(registration_for(host).tools.render)
    calls: list[ToolCall] = []
    for call in response.tool_calls:
        calls += render(call, skill_file(call, placeholders), workspace)
    if len(calls) != len(response.tool_calls):
        # One neutral call became several: each needs its own id.
        calls = [dataclasses.replace(c, id=None) if c.id is not None else c for c in calls]
    return dataclasses.replace(response, tool_calls=tuple(calls))


def render_claude_code(call: ToolCall, skill: str | None, workspace: Path | None) -> list[ToolCall]:
    """A neutral call as Claude Code's tools and argument names."""
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


def render_pi(call: ToolCall, skill: str | None, workspace: Path | None) -> list[ToolCall]:
    """A neutral call on Pi: itself, but `skill` becomes a `read` of its SKILL.md."""
    if skill is None:
        return [call]
    return [dataclasses.replace(call, name="read", arguments={"path": skill})]


def skill_file(call: ToolCall, placeholders: Mapping[str, str]) -> str | None:
    """The snapshotted SKILL.md a neutral `skill {name}` call activates (None: not one)."""
    name = call.arguments.get("name")
    if call.name != "skill" or not isinstance(name, str):
        return None
    for key, directory in placeholders.items():
        if key.startswith("skill:") and skill_name(Path(directory)) == name:
            return str(Path(directory) / "SKILL.md")
    return None


def skill_name(directory: Path) -> str:
    """The frontmatter `name:` of a skill directory's SKILL.md, else the directory name.

    SKILL.md is read only as a regular file inside that directory: never through a link out.
    """
    try:
        data = read_inside(directory, "SKILL.md", limit=SKILL_FILE_LIMIT)
    except FileTooLargeError:
        data = None  # named by its directory, as a SKILL.md without frontmatter is
    try:
        lines = [] if data is None else data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = []
    if lines and lines[0].strip() == "---":
        for line in lines[1:]:
            if line.strip() == "---":
                break
            key, _, value = line.partition(":")
            if key.strip() == "name" and value.strip():
                return value.strip().strip("\"'")
    return directory.name
