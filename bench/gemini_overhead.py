"""Evaluator overhead per variant on Gemini CLI vs a bare Gemini CLI on the same scripted 1-turn
run.

The bare run gets what any hermetic Gemini CLI run needs anyway (an empty HOME with the same
settings.json, the same relaunch switch, pointed at the same loopback server), so the difference
is the evaluator. Both run Gemini CLI's own files: the items with `--skill-eval-gemini-eager off`,
so what the eager copy saves (`bench hosts` counts it) is not taken for the evaluator's.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.common import PROMPT, bare_home, item_times, one_turn_overhead
from pytest_skill_eval.hosts.binaries import PACKAGE_ROOT
from pytest_skill_eval.hosts.gemini_cli.binary import NODE_FLAGS
from pytest_skill_eval.hosts.gemini_cli.config import DEFAULT_MODEL, LOOPBACK_KEY, settings
from pytest_skill_eval.hosts.gemini_cli.host import QUIET
from pytest_skill_eval.hosts.runtime import node_command, node_entry, node_runtime
from pytest_skill_eval.modelserver.gemini import GEMINI
from pytest_skill_eval.modelserver.route import Route

GEMINI_CLI = PACKAGE_ROOT / "node_modules" / ".bin" / "gemini"
# As the evaluator starts it: `<pinned node> <its flags> <entry>`.
COMMAND = node_command(
    node_runtime(None, PACKAGE_ROOT), node_entry(GEMINI_CLI), GEMINI_CLI, NODE_FLAGS
)


def bare_command(route: Route, base: Path) -> tuple[list[str], dict[str, str]]:
    """A bare Gemini CLI in `base`'s empty home (the evaluator's settings.json), answered by
    `route`."""
    env = bare_home(base, ".gemini")
    config = settings(["read_file"], guard=False, commands=None)
    (base / "home" / ".gemini" / "settings.json").write_text(json.dumps(config))
    env |= {
        "GOOGLE_GEMINI_BASE_URL": route.base_url(GEMINI),
        "GEMINI_API_KEY": LOOPBACK_KEY,
        **QUIET,
    }
    argv = [
        *COMMAND, "--output-format", "stream-json", "--approval-mode", "yolo",
        "--skip-trust", "--model", DEFAULT_MODEL, f"--prompt={PROMPT}",
    ]  # fmt: skip
    return argv, env


def main(groups: int = 20) -> dict[str, object]:
    """Median item wall time minus median bare-Gemini-CLI wall time."""
    return one_turn_overhead(
        "gemini-overhead",
        "bare_gemini_median_s",
        item_times("gemini-cli", "--skill-eval-gemini-eager", "off"),
        bare_command,
        groups,
    )


if __name__ == "__main__":
    main()
