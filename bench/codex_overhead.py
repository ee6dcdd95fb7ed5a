"""Evaluator overhead per variant on Codex vs a bare Codex on the same scripted 1-turn run.

The bare run gets what any hermetic Codex run needs anyway (an empty CODEX_HOME with the same
hardened config.toml, pointed at the same loopback server), so the difference is the evaluator.
The evaluator runs the native Codex binary that the npm `codex` launcher would exec; the figure
against the bar is against that same binary run bare (the evaluator's own work), and
`overhead_vs_codex_exec_ms` is against `codex exec` typed as usual (the launcher's Node start-up
included), which is what a user would otherwise wait for.
"""

from __future__ import annotations

import os
from pathlib import Path

from bench.common import PROMPT, REPLY, bare_runs, item_times, overhead
from pytest_skill_eval.hosts.binaries import PACKAGE_ROOT
from pytest_skill_eval.hosts.codex.binary import native_codex
from pytest_skill_eval.hosts.codex.config import LOOPBACK_KEY, CodexConfig
from pytest_skill_eval.hosts.codex.host import responses_base_url
from pytest_skill_eval.hosts.codex.registration import KEY_ENV
from pytest_skill_eval.modelserver.server import Route

CODEX = PACKAGE_ROOT / "node_modules" / ".bin" / "codex"
# What the evaluator runs, and the environment the launcher would have given it.
NATIVE, NATIVE_ENV = native_codex(CODEX) or (CODEX, {})


def _bare_times(runs: int, tmp: Path, codex: Path = NATIVE) -> list[float]:
    def command(route: Route, base: Path) -> tuple[list[str], dict[str, str]]:
        for name in ("home/.codex", "tmp"):
            (base / name).mkdir(parents=True)
        config = CodexConfig(base_url=responses_base_url(route))
        (base / "home" / ".codex" / "config.toml").write_text(config.toml())
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(base / "home"),
            "CODEX_HOME": str(base / "home" / ".codex"),
            "TMPDIR": str(base / "tmp"),
            KEY_ENV: LOOPBACK_KEY,
        }
        if codex == NATIVE:
            env |= NATIVE_ENV
        argv = [
            str(codex), "exec", "--json", "--skip-git-repo-check", "--strict-config",
            "--", PROMPT,
        ]  # fmt: skip
        return argv, env

    return [wall for wall, _ in bare_runs([{"response": REPLY}], runs, tmp, command)]


def main(groups: int = 20) -> dict[str, object]:
    """Median item wall time minus median bare-Codex wall time."""
    return overhead(
        "codex-overhead",
        "bare_codex_median_s",
        item_times("codex", "--skill-eval-codex-unconfined-reads"),
        _bare_times,
        PROMPT,
        REPLY,
        groups,
        also=("codex_exec", lambda runs, tmp: _bare_times(runs, tmp, CODEX)),
    )


if __name__ == "__main__":
    main()
