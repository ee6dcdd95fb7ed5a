"""`runtime.prompt`, declared context and the thinking level, said in Claude Code's own knobs.

Pi's guard extension decides the system prompt (`hosts/pi/extensions/guard.mjs`): `isolated`
replaces the host's prompt with the evaluator's (the tools, three guidelines, the declared
context, the working directory); `host` keeps the host's and appends the declared context, if
any. On Claude Code the same texts go in through `--system-prompt-file` and
`--append-system-prompt-file` (files, since a declared context can outgrow one argv string).
Claude Code lists skills itself, in a reminder inside the first user message, with either
flag, so the evaluator's prompt does not list them again.

Thinking: `off` disables it (`CLAUDE_CODE_DISABLE_THINKING`); every other level Claude Code
has is its `--effort` (a model without effort support keeps its own thinking budget). Pi's
`minimal` has no Claude Code equivalent and is refused at collection (definitions/models.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ...errors import HostError
from ..context import declared_context_block, load_context
from ..context import isolated_prompt as shared_prompt
from .events import NEUTRAL_TOOLS

# What Claude Code can express: `off` is an environment switch, the rest are `--effort` values.
THINKING_OFF = "off"
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
THINKING_LEVELS = (THINKING_OFF, *EFFORT_LEVELS)


def isolated_prompt(tools: list[str], entries: Sequence[Mapping[str, object]], cwd: Path) -> str:
    """The evaluator's system prompt: Pi's isolated prompt, with Claude Code's tool names."""
    return shared_prompt("Claude Code", tools, NEUTRAL_TOOLS, "the Skill tool", entries, cwd)


def prompt_arguments(
    mode: str, tools: list[str], environment: Mapping[str, str], cwd: Path, directory: Path
) -> list[str]:
    """The flags for `runtime.prompt`; the prompt texts are written into `directory`."""
    entries = load_context(environment.get("SKILL_EVAL_CONTEXT_MANIFEST", ""))
    if mode == "isolated":
        path = directory / "system-prompt.md"
        path.write_text(isolated_prompt(tools, entries, cwd), encoding="utf-8")
        return ["--system-prompt-file", str(path)]
    if mode != "host":
        raise HostError(f"runtime.prompt must be isolated or host, got {mode!r}")
    if not entries:
        return []
    path = directory / "append-system-prompt.md"
    path.write_text(declared_context_block(entries), encoding="utf-8")
    return ["--append-system-prompt-file", str(path)]


def thinking_settings(level: str | None) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that give Claude Code the declared thinking level."""
    if level is None:
        return [], {}
    if level == THINKING_OFF:
        return [], {"CLAUDE_CODE_DISABLE_THINKING": "1"}
    if level in EFFORT_LEVELS:
        return ["--effort", level], {}
    raise HostError(
        f"thinking level {level!r} has no Claude Code equivalent; use one of "
        + ", ".join(THINKING_LEVELS)
    )
