"""Neutral tool calls as Codex's own: a shell `exec_command` to read, `apply_patch` to write.

Codex 0.171.0 offers no file tools without a shell. A neutral `read` (and a `skill`
activation, which reads the snapshotted SKILL.md) becomes `exec_command {"cmd": "cat '<path>'"}`;
`write` becomes an `apply_patch` Add File, `edit` an Update File. `apply_patch` is a freeform
(`custom`) tool: its call carries the patch text as the `input` argument, which the Responses
renderer sends as a `custom_tool_call`.

An edit is turned into whole lines against the file as it is when the answer is rendered (the
host applies it right after), so a fragment of a line edits that line. The file is read only
inside the subject's workspace (a relative name resolves against it; see
`common.entries.read_inside`): a file outside it, behind a symlink pointing out, or not a
regular file is never opened. When the file cannot be read there or does not contain
`oldText`, the hunk removes `oldText` literally and Codex's patch fails the way Pi's edit
would, carrying no byte of the file. Codex ends every written file with a newline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...common.entries import FileTooLargeError, read_inside
from ...modelserver.responses import CUSTOM_INPUT
from ...modelserver.script import ToolCall

EXEC = "exec_command"
APPLY_PATCH = "apply_patch"
# Declared commands: the evaluator's MCP server `skill-eval`, whose tools Codex offers in the
# namespace `mcp__<server>__` (the name sanitised), called by namespace and tool name.
RUN_COMMAND = "run_command"
RUN_COMMAND_NAMESPACE = "mcp__skill_eval"
# Lines of unchanged context around a change, so the hunk finds its place in the file.
_CONTEXT = 3
# A file an edit is rendered against is read (and diffed) only up to this many bytes.
EDIT_LIMIT = 4 * 1024 * 1024


def render(call: ToolCall, skill: str | None, workspace: Path | None) -> list[ToolCall]:
    """A neutral call as Codex's shell, patch or MCP tool (its registration's renderer)."""
    return [codex_call(call, skill, workspace)]


def codex_call(call: ToolCall, skill_file: str | None, workspace: Path | None) -> ToolCall:
    """`call` in Codex's tools; `skill_file` is the SKILL.md of a `skill` call (else None).

    `workspace` is the subject's workspace, the only place an edit's file is read from (None:
    nowhere).
    """
    args = call.arguments
    path = args.get("path")
    if skill_file is not None:
        return _exec(call, f"cat {shell_quote(skill_file)}")
    if call.name == "read" and isinstance(path, str):
        return _exec(call, _read_command(path, args.get("offset"), args.get("limit")))
    if call.name == "bash" and isinstance(args.get("command"), str):
        return _exec(call, args["command"])
    if call.name == RUN_COMMAND:
        return dataclasses.replace(call, namespace=RUN_COMMAND_NAMESPACE)
    if call.name == "write" and isinstance(path, str) and isinstance(args.get("content"), str):
        return _patch(call, add_file_patch(path, args["content"]))
    if call.name == "edit" and isinstance(path, str):
        edits = _edits(args)
        if edits is not None:
            return _patch(call, edit_patch(path, edits, workspace))
    return call


def shell_quote(text: str) -> str:
    """`text` in single quotes for a POSIX shell (a quote inside becomes '"'"')."""
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _read_command(path: str, offset: Any, limit: Any) -> str:
    quoted = shell_quote(path)
    first = offset if _positive(offset) else 1
    if not _positive(limit) and first == 1:
        return f"cat {quoted}"
    last = f"{first + limit - 1}" if _positive(limit) else "$"
    return f"sed -n '{first},{last}p' {quoted}"


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _exec(call: ToolCall, command: str) -> ToolCall:
    return dataclasses.replace(call, name=EXEC, arguments={"cmd": command})


def _patch(call: ToolCall, patch: str) -> ToolCall:
    return dataclasses.replace(call, name=APPLY_PATCH, arguments={CUSTOM_INPUT: patch})


def _edits(args: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    raw = args.get("edits")
    if not isinstance(raw, list):
        raw = [{"oldText": args.get("oldText"), "newText": args.get("newText")}]
    edits = [
        (edit["oldText"], edit["newText"])
        for edit in raw
        if isinstance(edit, dict)
        and isinstance(edit.get("oldText"), str)
        and isinstance(edit.get("newText"), str)
    ]
    return edits if edits and len(edits) == len(raw) else None


def add_file_patch(path: str, content: str) -> str:
    """An apply_patch creating (or replacing) `path` with `content`."""
    lines = _lines(content) or [""]
    body = "".join(f"+{line}\n" for line in lines)
    return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n"


def edit_patch(path: str, edits: Sequence[tuple[str, str]], workspace: Path | None) -> str:
    """An apply_patch making `edits` (oldText → newText, in order) to `path`.

    `path` is read only inside `workspace` (None: not at all); else the hunk is literal.
    """
    before: str | None = None
    try:
        data = read_inside(workspace, path, limit=EDIT_LIMIT) if workspace is not None else None
    except FileTooLargeError:
        data = None  # too large to patch from: the literal hunk
    if data is not None:
        try:
            before = data.decode("utf-8")
        except UnicodeDecodeError:
            before = None
    after = before
    for old, new in edits:
        if after is None or not old or old not in after:
            after = None
            break
        after = after.replace(old, new, 1)
    if before is None or after is None:
        # Not applicable as written: a literal hunk, which the host will refuse.
        hunk = [f"-{line}" for old, _ in edits for line in old.split("\n")]
        hunk += [f"+{line}" for _, new in edits for line in new.split("\n")]
    else:
        hunk = _hunk(_lines(before), _lines(after))
    body = "".join(f"{line}\n" for line in ["@@", *hunk])
    return f"*** Begin Patch\n*** Update File: {path}\n{body}*** End Patch\n"


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _hunk(before: list[str], after: list[str]) -> list[str]:
    """Context, removed and added lines turning `before` into `after` (one changed block)."""
    prefix = 0
    while prefix < min(len(before), len(after)) and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(before), len(after)) - prefix and before[-1 - suffix] == after[-1 - suffix]
    ):
        suffix += 1
    lead = before[max(0, prefix - _CONTEXT) : prefix]
    removed = before[prefix : len(before) - suffix]
    added = after[prefix : len(after) - suffix]
    trail = before[len(before) - suffix : len(before) - suffix + _CONTEXT]
    return (
        [f" {line}" for line in lead]
        + [f"-{line}" for line in removed]
        + [f"+{line}" for line in added]
        + [f" {line}" for line in trail]
    )
