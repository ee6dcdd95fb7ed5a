"""One script for every host: neutral tool calls rendered as the tools of the host asking.

A script speaks a neutral vocabulary (`read {path}`, `write {path, content}`, `edit {path,
edits|oldText/newText}`, `run_command {command}`) plus `skill {name}`, a neutral way to activate
a skill. Each host writes a neutral call as its own calls in its subpackage's `tools.render`
(imported when a request from that host is answered); a call it does not know (a host-native
one) passes through unchanged. Which host asks is told by the tools its request offers
(`ToolDialect.offers`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..modelserver.gemini import function_names
from ..modelserver.script import ScriptedResponse, ToolCall
from ..workspace.entries import FileTooLargeError, read_inside
from .registration import load
from .registry import DEFAULT_HOST, names, registered, registration_for

# A skill's SKILL.md is read for its frontmatter name: at most this many bytes.
SKILL_FILE_LIMIT = 1024 * 1024
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
    render: Renderer = load(registration_for(host).render)
    calls: list[ToolCall] = []
    for call in response.tool_calls:
        calls += render(call, skill_file(call, placeholders), workspace)
    if len(calls) != len(response.tool_calls):
        # One neutral call became several: each needs its own id.
        calls = [dataclasses.replace(c, id=None) if c.id is not None else c for c in calls]
    return dataclasses.replace(response, tool_calls=tuple(calls))


def neutral_edits(args: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """The (oldText, newText) replacements of a neutral `edit`: its `edits`, else its one pair."""
    edits = args.get("edits")
    if not isinstance(edits, list):
        return [(args.get("oldText"), args.get("newText"))]
    pairs = [edit if isinstance(edit, dict) else {} for edit in edits]
    return [(edit.get("oldText"), edit.get("newText")) for edit in pairs]


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
