"""A `claude plugin eval` grader as schema-v1 expectations, only where one expresses it exactly.

A regex grader maps when its pattern is a literal once unescaped (`lit` → `contains`, `^lit$` →
`equals`, `not_contains` or `count:0` → `not-contains`); `tool_used` on a tool we offer maps to
`tool-call` `called` (`min` ≥ 1, no `max`) or `not-called` (`max: 0`); `file_exists` on a
literal path maps to `path` (the fixture never holds the file, so "created" and "exists" agree).
Judges become review questions; everything else is a `Note` saying why it cannot map.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .suite import Fidelity, paired

# Claude Code's tool names and the neutral tools a body group offers.
NEUTRAL = {"Read": "read", "Write": "write", "Edit": "edit"}
# JavaScript flags that do not change what a single test of a literal matches.
HARMLESS_FLAGS = set("gd")
METACHARACTERS = set(".^$*+?()[]{}|")
GLOB = re.compile(r"[*?\[\]{}]")


@dataclass(slots=True)
class Mapped:
    """What one case's graders became."""

    expectations: list[dict[str, Any]] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    # (fidelity, item, becomes), noted under the case by the caller.
    notes: list[tuple[Fidelity, str, str]] = field(default_factory=list)

    def exact(self, item: str, ident: str, check: dict[str, Any], both: bool) -> None:
        self.expectations += paired(ident, check, both=both)
        becomes = f"`{check['kind']}` `{check['expect']}`" + ("" if both else ", candidate only")
        self.notes.append((Fidelity.EXACT, item, becomes))

    def cannot(self, item: str, why: str) -> None:
        self.notes.append((Fidelity.NOT_IMPORTED, item, why))


def literal(pattern: str) -> str | None:
    """The text `pattern` matches literally, or None when it is a real regular expression."""
    out: list[str] = []
    escaped = False
    for char in pattern:
        if escaped:
            if char.isalnum():  # \d, \b, \n…: a class or an assertion, not the letter
                return None
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in METACHARACTERS:
            return None
        else:
            out.append(char)
    return None if escaped or not out else "".join(out)


def text_check(grader: dict[str, Any], kind: str) -> tuple[dict[str, Any] | None, str]:
    """A `response-text` or `file-text` check for a regex grader, or None and why not."""
    flags = set(str(grader.get("flags", "")))
    if flags - HARMLESS_FLAGS:
        return (
            None,
            f"regex flags {''.join(sorted(flags - HARMLESS_FLAGS))}: no check matches regex",
        )
    pattern = str(grader.get("pattern", ""))
    match = str(grader.get("match", "contains"))
    whole = pattern.startswith("^") and pattern.endswith("$") and not pattern.endswith("\\$")
    text = literal(pattern[1:-1] if whole else pattern)
    if text is None:
        return None, "a regular expression: text checks compare literal text only"
    if match in ("not_contains", "count:0"):
        return {"kind": kind, "expect": "not-contains", "value": text}, ""
    if match != "contains":
        return None, f"match {match}: no check counts matches"
    return {"kind": kind, "expect": "equals" if whole else "contains", "value": text}, ""


def regex_grader(grader: dict[str, Any], name: str, both: bool, mapped: Mapped) -> None:
    item = f"{name} (regex)"
    target = grader.get("target", "last_message")
    if target == "last_message":
        check, why = text_check(grader, "response-text")
    elif isinstance(target, dict) and target.get("source") == "file" and "path" in target:
        check, why = text_check(grader, "file-text")
        if check is not None:
            check["path"] = str(target["path"])
    else:
        shown = target if isinstance(target, str) else "a non-file source"
        why = {
            "files": "created-file paths: no check lists files created during the run",
            "trace": "the run's trace: no check reads the stream of events",
            "mock_calls": "MCP mock calls: MCP mocks are not imported",
        }.get(str(shown), f"target {shown}: not a text the checks read")
        check = None
    if check is None:
        mapped.cannot(item, why)
        return
    mapped.exact(item, name, check, both)


def tool_grader(grader: dict[str, Any], name: str, both: bool, mapped: Mapped) -> None:
    """`tool_used` on a tool other than Skill."""
    item = f"{name} (tool_used {grader.get('tool')})"
    tool = NEUTRAL.get(str(grader.get("tool")))
    if tool is None:
        mapped.cannot(item, "a tool body groups do not offer (read, write, edit only)")
        return
    least, most = grader.get("min", 1), grader.get("max")
    if most == 0 and least in (0, 1):
        check: dict[str, Any] = {"kind": "tool-call", "tool": tool, "expect": "not-called"}
    elif most is None and isinstance(least, int) and least == 1:
        check = {"kind": "tool-call", "tool": tool, "expect": "called"}
    else:
        mapped.cannot(item, f"min {least}, max {most or 'unbounded'}: no check counts calls")
        return
    pattern = grader.get("input_match")
    if pattern is not None:
        text = literal(str(pattern))
        if text is None:
            mapped.cannot(item, "input_match is a regular expression: arguments compare literally")
            return
        check["argumentContains"] = [text]
        mapped.expectations += paired(name, check, both=both)
        mapped.notes.append(
            (
                Fidelity.APPROXIMATE,
                item,
                "`tool-call` with `argumentContains` (neutral arguments, not "
                "Claude Code's input JSON)",
            )
        )
        return
    mapped.exact(item, name, check, both)


def file_grader(grader: dict[str, Any], name: str, both: bool, mapped: Mapped) -> None:
    item = f"{name} (file_exists)"
    path = str(grader.get("path", ""))
    if not path or GLOB.search(path):
        mapped.cannot(item, f"glob {path}: no check matches created files by glob")
        return
    expect = "exists" if grader.get("exists", True) else "absent"
    mapped.exact(item, name, {"kind": "path", "path": path, "expect": expect}, both)


def map_graders(graders: list[dict[str, Any]]) -> Mapped:
    """Every grader of a case but `tool_used` on Skill (the trigger group's) as checks, review
    questions or notes."""
    mapped = Mapped()
    for grader in graders:
        name, kind = str(grader["name"]), str(grader.get("type"))
        both = grader.get("arm", "both") != "with-only"
        weight = grader.get("weight", 1)
        if weight != 1:
            mapped.cannot(f"{name} (weight {weight})", "weights: checks pass or fail, no score")
        if kind == "regex":
            regex_grader(grader, name, both, mapped)
        elif kind == "tool_used":
            tool_grader(grader, name, both, mapped)
        elif kind == "file_exists":
            file_grader(grader, name, both, mapped)
        elif kind in ("llm", "baseline"):
            question = str(grader.get("criteria", "")).strip()
            if kind == "baseline":
                question += f" (compared with the reference run {grader.get('baseline_file')})"
            mapped.questions.append(question)
            mapped.notes.append((Fidelity.NOT_GRADED, f"{name} ({kind})", "a review question"))
        elif kind == "tool_order":
            mapped.cannot(f"{name} (tool_order)", "no check orders tool calls")
        else:
            mapped.cannot(f"{name} ({kind})", "an unknown grader type")
    return mapped
