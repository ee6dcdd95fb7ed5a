"""Evaluator overhead per variant on Claude Code vs a bare `claude -p` on the same 1-turn run.

Both sides answer from the same scripted server over loopback and run with the same isolation
(an empty HOME, CLAUDE_CONFIG_DIR and TMPDIR, the quiet switches): the difference is what the
evaluator adds per variant (definition, snapshots, guard hook, evidence, seals, grading).
"""

from __future__ import annotations

from pathlib import Path

from bench.common import PROMPT, REPO, bare_home, item_times, one_turn_overhead
from pytest_skill_eval.hosts.claude_code.host import LOOPBACK_KEY
from pytest_skill_eval.hosts.claude_code.registration import QUIET
from pytest_skill_eval.modelserver.route import Route
from pytest_skill_eval.modelserver.wire import ANTHROPIC

CLAUDE = REPO / "node_modules" / ".bin" / "claude"


def bare_command(route: Route, base: Path) -> tuple[list[str], dict[str, str]]:
    """A bare `claude -p` in `base`'s empty home, answered by `route`."""
    env = bare_home(base, ".claude", path="/usr/bin:/bin")
    env |= {
        "CLAUDE_CONFIG_DIR": str(base / "home" / ".claude"),
        "ANTHROPIC_BASE_URL": route.base_url(ANTHROPIC),
        "ANTHROPIC_API_KEY": LOOPBACK_KEY,
        **QUIET,
    }
    argv = [
        str(CLAUDE), "-p", PROMPT, "--output-format", "stream-json", "--verbose",
        "--tools", "Read", "--no-session-persistence",
    ]  # fmt: skip
    return argv, env


def main(groups: int = 10) -> dict[str, object]:
    """Median item wall time on Claude Code minus the median bare `claude -p` wall time."""
    return one_turn_overhead(
        "evaluator-overhead-claude-code",
        "bare_claude_median_s",
        item_times("claude-code"),
        bare_command,
        groups,
    )


if __name__ == "__main__":
    main()
