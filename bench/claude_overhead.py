"""Evaluator overhead per variant on Claude Code vs a bare `claude -p` on the same 1-turn run.

Both sides answer from the same scripted server over loopback and run with the same isolation
(an empty HOME, CLAUDE_CONFIG_DIR and TMPDIR, the quiet switches): the difference is what the
evaluator adds per variant (definition, snapshots, guard hook, evidence, seals, grading).
"""

from __future__ import annotations

from pathlib import Path

from bench.common import PROMPT, REPLY, REPO, bare_runs, item_times, overhead
from pytest_skill_eval.hosts.claude_code.host import LOOPBACK_KEY
from pytest_skill_eval.hosts.claude_code.registration import QUIET
from pytest_skill_eval.modelserver.server import Route
from pytest_skill_eval.modelserver.wire import ANTHROPIC

CLAUDE = REPO / "node_modules" / ".bin" / "claude"


def _bare_times(runs: int, tmp: Path) -> list[float]:
    def command(route: Route, base: Path) -> tuple[list[str], dict[str, str]]:
        for name in ("home/.claude", "tmp"):
            (base / name).mkdir(parents=True)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(base / "home"),
            "CLAUDE_CONFIG_DIR": str(base / "home" / ".claude"),
            "TMPDIR": str(base / "tmp"),
            "ANTHROPIC_BASE_URL": route.base_url(ANTHROPIC),
            "ANTHROPIC_API_KEY": LOOPBACK_KEY,
            **QUIET,
        }
        argv = [
            str(CLAUDE), "-p", PROMPT, "--output-format", "stream-json", "--verbose",
            "--tools", "Read", "--no-session-persistence",
        ]  # fmt: skip
        return argv, env

    return [wall for wall, _ in bare_runs([{"response": REPLY}], runs, tmp, command)]


def main(groups: int = 10) -> dict[str, object]:
    """Median item wall time on Claude Code minus the median bare `claude -p` wall time."""
    return overhead(
        "evaluator-overhead-claude-code",
        "bare_claude_median_s",
        item_times("claude-code"),
        _bare_times,
        PROMPT,
        REPLY,
        groups,
    )


if __name__ == "__main__":
    main()
