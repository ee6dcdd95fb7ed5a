"""The path and tool guard of the hosts whose hooks speak Claude Code's protocol, run by Claude
Code as its PreToolUse hook and by Gemini CLI as its BeforeTool hook (a script, stdlib only,
started with `python -I`: it imports nothing of the evaluator, so each host's tool names are
listed here).

Same semantics as Pi's guard: only declared tools; `Read` inside the workspace and declared
resources, `Write`/`Edit` inside the workspace, each path resolved the way the kernel walks it
(planted symlinks followed, `..` after the link). Exit status 2 makes Claude Code refuse the call
and show the reason to the model; any configuration problem refuses too (fail closed).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

# Claude Code's and Gemini CLI's tool names → the neutral names a group declares (the MCP tools
# are the evaluator's for declared commands: they take no path, the server checks the command
# id). Gemini CLI's BeforeTool hook gives the same `tool_name`, `tool_input` and `cwd`, and
# refuses on exit status 2 too.
NEUTRAL = {
    "Read": "read",
    "Write": "write",
    "Edit": "edit",
    "mcp__skill-eval__run_command": "run_command",
    "read_file": "read",
    "write_file": "write",
    "replace": "edit",
    "mcp_skill-eval_run_command": "run_command",
}
# Tools the evaluator itself offers: the skill loaders (their input names a declared skill only).
EVALUATOR_TOOLS = ("Skill", "activate_skill")


class Refused(Exception):
    """The call is refused; the message is the reason the model sees."""


def _json_env(name: str) -> Any:
    raw = os.environ.get(name)
    if raw is None:
        raise Refused(f"guard misconfigured: {name} is not set")
    try:
        return json.loads(raw)
    except ValueError as error:
        raise Refused(f"guard misconfigured: {name} is not JSON") from error


def _canonical_root(value: Any) -> str:
    if not isinstance(value, str) or not os.path.isabs(value):
        raise Refused("guard misconfigured: roots must be absolute paths")
    return os.path.realpath(value)


def resolve_physically(target: str, allow_missing: bool) -> str:
    """Every existing component through its symlinks; a missing tail only when allowed."""
    parts = [p for p in target.split(os.sep) if p not in ("", ".")]
    current = os.path.realpath(os.sep)
    for index, part in enumerate(parts):
        if part == "..":
            current = os.path.dirname(current)
            continue
        following = os.path.join(current, part)
        try:
            os.lstat(following)
        except FileNotFoundError:
            rest = parts[index:]
            if not allow_missing or ".." in rest:
                raise
            return os.path.join(current, *rest)
        current = os.path.realpath(following, strict=True)
    return current


def _inside(root: str, candidate: str) -> bool:
    return candidate == root or candidate.startswith(root.rstrip(os.sep) + os.sep)


def check(call: dict[str, Any]) -> None:
    """Raise `Refused` unless the call is declared and stays inside its roots."""
    tool = call.get("tool_name")
    if tool in EVALUATOR_TOOLS:
        return
    allowed = _json_env("SKILL_EVAL_ALLOWED_TOOLS")
    neutral = NEUTRAL.get(str(tool))
    if neutral is None or not isinstance(allowed, list) or neutral not in allowed:
        raise Refused(f"Tool is not declared for this evaluation: {tool}")
    if neutral == "run_command":
        return
    raw_input = call.get("tool_input")
    arguments: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    raw = arguments.get("file_path")
    if not isinstance(raw, str) or not raw:
        raise Refused(f"Tool {tool} needs a string file_path inside the evaluation environment")
    cwd = call.get("cwd") if isinstance(call.get("cwd"), str) else os.getcwd()
    target = raw if os.path.isabs(raw) else os.path.join(str(cwd), raw)
    if neutral == "read":
        roots = [_canonical_root(r) for r in _json_env("SKILL_EVAL_ALLOWED_ROOTS")]
    else:
        roots = [_canonical_root(os.environ.get("SKILL_EVAL_WRITABLE_ROOT"))]
    candidates = {target, os.path.normpath(target)} if neutral == "write" else {target}
    for candidate in candidates:
        try:
            resolved = resolve_physically(candidate, allow_missing=neutral == "write")
        except OSError as error:
            raise Refused(
                f"path cannot be resolved inside the evaluation environment: {raw}"
            ) from error
        if not any(_inside(root, resolved) for root in roots):
            raise Refused(f"path escapes the evaluation environment: {raw}")


def main() -> int:
    """Read the hook's JSON from stdin; exit 0 to allow, 2 (reason on stderr) to refuse."""
    try:
        call = json.load(sys.stdin)
        if not isinstance(call, dict):
            raise Refused("guard received no tool call")
        check(call)
    except Refused as refusal:
        print(str(refusal), file=sys.stderr)
        return 2
    except Exception as error:  # fail closed: an unforeseen problem never lets a call through
        print(f"guard failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
