"""`codex exec --json` events translated into the neutral observation.

Codex has no read, write or edit tool: it reads through its shell (`command_execution` items)
and changes files through `apply_patch` (`file_change` items). Tool activity keeps those under
Codex's own names (`exec_command` with the `command`, `apply_patch` with the `changes`), and a
declared command, a call of the evaluator's MCP tool (an `mcp_tool_call` item), is the neutral
`run_command` with its `command` argument, as on Pi and Claude Code. A read is
a path a successful command named, so the target's activation is its shell reading the
snapshotted SKILL.md (either the path Codex lists or the snapshot it resolves to). Usage comes
from `turn.completed`, which counts the whole thread, so a later turn is the difference.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...evidence.observed import Usage
from ..observation import Observation, text_or_none

SHELL_TOOL = "exec_command"
# Declared commands: the evaluator's MCP server (`hosts/command_server.py`) and its tool.
COMMAND_SERVER = "skill-eval"
RUN_COMMAND = "run_command"
PATCH_TOOL = "apply_patch"
_REDIRECTS = {">", ">>", "&>", "2>", "1>", ">|"}
_USAGE = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cacheRead": "cached_input_tokens",
    "cacheWrite": "cache_write_input_tokens",
}


def shell_script(command: str) -> str:
    """The script of `/bin/bash -lc '<script>'` (the whole command for any other shape)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[1] in ("-lc", "-c") and Path(words[0]).name in ("bash", "sh"):
        return words[2]
    return command


def named_paths(command: str) -> list[str]:
    """The words of a command's script that could name a file it read: not the programs, their
    options or a redirect target."""
    try:
        lexer = shlex.shlex(shell_script(command), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return []
    paths: list[str] = []
    skip = False
    command_name = True  # the first word of each simple command is the program, not a file
    for word in words:
        if skip:
            skip = False
            continue
        if word in _REDIRECTS:
            skip = True
            continue
        if not word or set(word) <= set(";&|()<>"):
            command_name = True
            continue
        if command_name:
            command_name = False
            continue
        if not word.startswith("-"):
            paths.append(word)
    return paths


def mcp_tool_name(item: Mapping[str, object]) -> str:
    """The neutral `run_command` for the evaluator's own server's tool; any other MCP tool
    keeps Codex's `mcp__<server>__<tool>`."""
    server, tool = item.get("server"), item.get("tool")
    if server == COMMAND_SERVER and tool == RUN_COMMAND:
        return RUN_COMMAND
    return f"mcp__{server}__{tool}"


def _count(usage: Mapping[str, object], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def priced(usage: Mapping[str, int], prices: Mapping[str, float] | None) -> float:
    """What `usage` costs at `prices` (USD per million tokens, as the served model is priced
    for every host); Codex counts cached input inside `input`, so only the rest is input."""
    if not prices:
        return 0.0
    cached = usage.get("cacheRead", 0) + usage.get("cacheWrite", 0)
    tokens = {**usage, "input": max(0, usage.get("input", 0) - cached)}
    return round(sum(tokens.get(key, 0) * prices.get(key, 0.0) for key in _USAGE) / 1e6, 12)


@dataclass
class EventTranslator:
    """Applies events to an observation.

    `skills` maps every path a skill's SKILL.md is known by (as listed and as snapshotted) to
    the snapshot path reads are recorded under.
    """

    obs: Observation
    skills: Mapping[str, str]
    # The served model's prices: Codex prices nothing itself, so usage is priced here.
    prices: Mapping[str, float] | None = None
    _thread_usage: dict[str, int] = field(default_factory=dict)

    def apply(self, event: Mapping[str, object]) -> bool:
        """Apply one event; True when it settles the current turn (`turn.completed`/`failed`)."""
        kind = event.get("type")
        turn = self.obs.current
        if turn is None:
            return False
        item = event.get("item")
        if kind == "item.started" and isinstance(item, dict):
            self._started(item)
        elif kind == "item.completed" and isinstance(item, dict):
            self._completed(item)
        elif kind == "turn.completed":
            usage = event.get("usage")
            turn.usage = self._turn_usage(usage if isinstance(usage, dict) else {})
            return self.obs.settle()
        elif kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            turn.assistant_error = turn.assistant_error or f"Codex reported: {message or 'error'}"
            return self.obs.settle()
        elif kind == "error":
            # A stream problem Codex may still recover from (it retries); `turn.failed` decides.
            self.obs.message({"role": "host", "error": str(event.get("message") or "")})
        return False

    def _started(self, item: Mapping[str, object]) -> None:
        call = text_or_none(item.get("id"))
        if item.get("type") == "command_execution":
            self.obs.tool_started(call, SHELL_TOOL, {"command": item.get("command")})
        elif item.get("type") == "file_change":
            self.obs.tool_started(call, PATCH_TOOL, {"changes": item.get("changes")})
        elif item.get("type") == "mcp_tool_call":
            arguments = item.get("arguments")
            args = arguments if isinstance(arguments, dict) else {"arguments": arguments}
            self.obs.tool_started(call, mcp_tool_name(item), args)

    def _completed(self, item: dict[str, object]) -> None:
        kind = item.get("type")
        turn = self.obs.current
        if turn is None:
            return
        if kind == "agent_message":
            text = str(item.get("text") or "")
            self.obs.message({"role": "assistant", "content": [{"type": "text", "text": text}]})
            turn.response = text
        elif kind in ("command_execution", "file_change", "mcp_tool_call"):
            self._tool_completed(item)
        elif kind == "error":
            # Codex reports warnings (unknown model metadata, deprecated keys) as error items.
            self.obs.message({"role": "host", "warning": str(item.get("message") or "")})

    def _tool_completed(self, item: dict[str, object]) -> None:
        call_id = item.get("id")
        failed = item.get("status") != "completed" or item.get("exit_code") not in (0, None)
        result = item.get("result")
        failed = failed or item.get("error") is not None
        failed = failed or (isinstance(result, dict) and result.get("is_error") is True)
        activity = self.obs.tool_ended(call_id, failed, result)
        if activity is None:
            self._started(item)  # a completed item Codex never announced
            activity = self.obs.tool_ended(call_id, failed, result)
        if activity is not None and item.get("type") == "command_execution":
            activity["args"] = {
                "command": item.get("command"),
                "exitCode": item.get("exit_code"),
            }
        self.obs.message({"role": "tool", "item": item})
        if failed or item.get("type") != "command_execution":
            return
        command = str(item.get("command") or "")
        # A SKILL.md is matched by its path anywhere in the command, however it was quoted.
        reads = [snapshot for known, snapshot in self.skills.items() if known in command]
        reads += [self.skills.get(word, word) for word in named_paths(command)]
        for path in dict.fromkeys(reads):
            self.obs.read_succeeded(path)

    def _turn_usage(self, usage: Mapping[str, object]) -> Usage:
        """This turn's usage: the thread's total now minus the total after the turn before."""
        totals = {key: _count(usage, raw) for key, raw in _USAGE.items()}
        previous = self._thread_usage
        if previous and all(totals[k] >= previous.get(k, 0) for k in totals):
            turn = {k: totals[k] - previous.get(k, 0) for k in totals}
        else:
            turn = totals
        self._thread_usage = totals
        return {
            "input": turn["input"],
            "output": turn["output"],
            "cacheRead": turn["cacheRead"],
            "cacheWrite": turn["cacheWrite"],
            "cost": {"total": priced(turn, self.prices)},
        }
