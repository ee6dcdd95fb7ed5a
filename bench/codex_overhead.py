"""Evaluator overhead per variant on Codex vs a bare Codex on the same scripted 1-turn run.

The bare run gets what any hermetic Codex run needs anyway (an empty CODEX_HOME with the same
hardened config.toml, pointed at the same loopback server), so the difference is the evaluator.
The evaluator runs the native Codex binary that the npm `codex` launcher would exec, as one
`codex app-server` for all of a subject's turns; the figure against the bar is against that same
binary's `codex exec`, the one-turn run a user types (so it holds what the app-server costs over
`exec` too), and `overhead_vs_codex_exec_ms` is against `codex exec` typed as usual (the
launcher's Node start-up included), which is what a user would otherwise wait for.
"""

from __future__ import annotations

from pathlib import Path

from bench.common import PROMPT, BareCommand, bare_home, item_times, one_turn_overhead
from pytest_skill_eval.hosts.binaries import PACKAGE_ROOT
from pytest_skill_eval.hosts.codex.binary import native_codex
from pytest_skill_eval.hosts.codex.config import LOOPBACK_KEY, CodexConfig
from pytest_skill_eval.hosts.codex.host import responses_base_url
from pytest_skill_eval.hosts.codex.registration import KEY_ENV
from pytest_skill_eval.modelserver.route import Route

CODEX = PACKAGE_ROOT / "node_modules" / ".bin" / "codex"
# What the evaluator runs, and the environment the launcher would have given it.
NATIVE, NATIVE_ENV = native_codex(CODEX) or (CODEX, {})


def bare_command(codex: Path) -> BareCommand:
    """A bare `codex exec` of `codex` (the native binary, with the launcher's environment, or
    the npm launcher) in an empty CODEX_HOME with the evaluator's config.toml."""

    def command(route: Route, base: Path) -> tuple[list[str], dict[str, str]]:
        env = bare_home(base, ".codex")
        config = CodexConfig(base_url=responses_base_url(route))
        (base / "home" / ".codex" / "config.toml").write_text(config.toml())
        env |= {"CODEX_HOME": str(base / "home" / ".codex"), KEY_ENV: LOOPBACK_KEY}
        if codex == NATIVE:
            env |= NATIVE_ENV
        argv = [
            str(codex), "exec", "--json", "--skip-git-repo-check", "--strict-config",
            "--", PROMPT,
        ]  # fmt: skip
        return argv, env

    return command


def main(groups: int = 20) -> dict[str, object]:
    """Median item wall time minus median bare-Codex wall time."""
    return one_turn_overhead(
        "codex-overhead",
        "bare_codex_median_s",
        item_times("codex", "--skill-eval-codex-unconfined-reads"),
        bare_command(NATIVE),
        groups,
        also=("codex_exec", bare_command(CODEX)),
    )


if __name__ == "__main__":
    main()
