"""The neutral tools a script calls, and the arguments each takes: one table, used to check
scripted calls at collection and documented in docs/definitions.md with what each registered
host shows the model instead (a test keeps them equal).

A call to a neutral tool with arguments the tool does not take reaches the host, which refuses
it (Pi: `Validation failed for tool "write"`), and the run fails for a reason no check names:
so a wrong argument is a warning when the script is collected. A call to any other tool (a
host-native one) is passed through unchecked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .script import Script, ToolCall


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument of a neutral tool."""

    name: str
    kind: str  # "string", "integer", "list of {oldText, newText}"
    required: bool
    meaning: str


@dataclass(frozen=True, slots=True)
class NeutralTool:
    """A tool a script may call on every host it supports (what each host shows instead is its
    registration's `tools`)."""

    name: str
    arguments: tuple[Argument, ...]

    def signature(self) -> str:
        """`{path, content}`: the arguments, optional ones with `?`."""
        return "{" + ", ".join(a.name + ("" if a.required else "?") for a in self.arguments) + "}"


_EDITS = "list of {oldText, newText}"

NEUTRAL_TOOLS: tuple[NeutralTool, ...] = (
    NeutralTool(
        "read",
        (
            Argument("path", "string", True, "file to read, relative to the workspace"),
            Argument("offset", "integer", False, "first line to read (1-based)"),
            Argument("limit", "integer", False, "most lines to read"),
        ),
    ),
    NeutralTool(
        "write",
        (
            Argument("path", "string", True, "file to create or replace"),
            Argument("content", "string", True, "the whole new content"),
        ),
    ),
    NeutralTool(
        "edit",
        (
            Argument("path", "string", True, "file to change"),
            Argument("edits", _EDITS, False, "replacements, each of exact text"),
            Argument("oldText", "string", False, "one replacement's exact text (without edits)"),
            Argument("newText", "string", False, "its replacement (without edits)"),
        ),
    ),
    NeutralTool(
        "skill",
        (Argument("name", "string", True, "the skill's frontmatter name"),),
    ),
    NeutralTool(
        "run_command",
        (Argument("command", "string", True, "name of one of the group's declared commands"),),
    ),
)

NEUTRAL_BY_NAME: Mapping[str, NeutralTool] = {tool.name: tool for tool in NEUTRAL_TOOLS}


def argument_problem(call: ToolCall) -> str | None:
    """What is wrong with a neutral call's arguments (None: nothing, or not a neutral tool)."""
    tool = NEUTRAL_BY_NAME.get(call.name)
    if tool is None:
        return None
    args = call.arguments
    known = {a.name for a in tool.arguments}
    unknown = sorted(set(args) - known)
    if unknown:
        return f"unknown argument {', '.join(repr(u) for u in unknown)}"
    missing = [a.name for a in tool.arguments if a.required and a.name not in args]
    if missing:
        return f"missing argument {', '.join(repr(m) for m in missing)}"
    for argument in tool.arguments:
        if argument.name in args and not _fits(argument.kind, args[argument.name]):
            article = "an" if argument.kind.startswith("i") else "a"
            return f"argument {argument.name!r} must be {article} {argument.kind}"
    if tool.name == "edit" and ("edits" in args) == ("oldText" in args or "newText" in args):
        return "give either 'edits' or both 'oldText' and 'newText'"
    if tool.name == "edit" and "edits" not in args and not {"oldText", "newText"} <= set(args):
        return "give both 'oldText' and 'newText'"
    return None


def _fits(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, list) and bool(value) and all(_is_replacement(e) for e in value)


def _is_replacement(entry: Any) -> bool:
    """One `{oldText, newText}` entry of an edit's `edits`."""
    return (
        isinstance(entry, dict)
        and set(entry) == {"oldText", "newText"}
        and all(isinstance(v, str) for v in entry.values())
    )


def tool_argument_problems(script: Script) -> list[tuple[int, str, str]]:
    """(1-based interaction, tool, problem and the expected arguments) of each wrong call."""
    found = []
    for number, interaction in enumerate(script.interactions, start=1):
        for call in interaction.response.tool_calls:
            problem = argument_problem(call)
            if problem is not None:
                expected = NEUTRAL_BY_NAME[call.name].signature()
                found.append((number, call.name, f"{problem}; {call.name} takes {expected}"))
    return found
