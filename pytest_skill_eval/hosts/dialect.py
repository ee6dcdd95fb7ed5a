"""One script for every host: neutral tool calls rendered as the tools of the host asking.

A script speaks a neutral vocabulary (`read {path}`, `write {path, content}`, `edit {path,
edits|oldText/newText}`, `run_command {command}`) plus `skill {name}`, a neutral way to activate
a skill. Each host writes a neutral call as its own calls in its subpackage's `tools.render`
(imported when a request from that host is answered); a call it does not know (a host-native
one) passes through unchanged. A route is opened with the renderer of the host it serves
(`renderer`): which host asks is never guessed from a request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..common.entries import FileTooLargeError, read_inside
from ..modelserver.rendering import Renderer
from ..modelserver.script import ScriptedResponse, ToolCall
from .registration import load
from .registry import names, registration_for

# A skill's SKILL.md is read for its frontmatter name: at most this many bytes.
SKILL_FILE_LIMIT = 1024 * 1024
# Writes one neutral call as a host's own calls: (call, the SKILL.md a `skill` call activates,
# the subject's workspace) → the host's calls.
CallRenderer = Callable[[ToolCall, str | None, Path | None], list[ToolCall]]


def renderer(host: str) -> Renderer:
    """The renderer a route serving `host` answers with: `render_for_host` for that host."""
    if host not in names():
        raise ValueError(f"unknown host {host!r}; expected one of {', '.join(names())}")

    def render(
        response: ScriptedResponse, placeholders: Mapping[str, str], workspace: Path | None
    ) -> ScriptedResponse:
        return render_for_host(response, host, placeholders, workspace)

    return render


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
    render: CallRenderer = load(registration_for(host).render)
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
