"""Evaluator overhead per variant on opencode vs a bare opencode on the same scripted 1-turn run.

The bare run gets what any hermetic opencode run needs anyway (an empty home and XDG
directories with the same generated opencode.json, the same switches, pointed at the same
loopback server, `opencode run --pure --format json --title`), so the difference is the
evaluator.
"""

from __future__ import annotations

import os
from pathlib import Path

from bench.common import PROMPT, REPLY, bare_runs, item_times, overhead
from pytest_skill_eval.hosts.binaries import PACKAGE_ROOT
from pytest_skill_eval.hosts.opencode.binary import packaged_binary
from pytest_skill_eval.hosts.opencode.config import OpencodeConfig
from pytest_skill_eval.hosts.opencode.environment import (
    NPM_REGISTRY,
    QUIET,
    REFUSING_REGISTRY,
    xdg_dirs,
)
from pytest_skill_eval.hosts.opencode.host import TITLE, quiet_installer
from pytest_skill_eval.modelserver.server import Route
from pytest_skill_eval.modelserver.wire import OPENAI

OPENCODE = packaged_binary(PACKAGE_ROOT) or Path("opencode")


def _bare_times(runs: int, tmp: Path) -> list[float]:
    def command(route: Route, base: Path) -> tuple[list[str], dict[str, str]]:
        home = base / "home"
        for directory in (home, base / "tmp", *xdg_dirs(home).values()):
            directory.mkdir(parents=True, exist_ok=True)
        config = home / ".config" / "opencode"
        quiet_installer(config)
        document = OpencodeConfig(
            base_url=route.base_url(OPENAI),
            model="scripted",
            tools=("read",),
            skills=(),
            allowed_roots=(str(base / "work"),),
        )
        (config / "opencode.json").write_text(document.json())
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home), **QUIET}
        env |= {name: str(path) for name, path in xdg_dirs(home).items()}
        env |= {"TMPDIR": str(base / "tmp"), NPM_REGISTRY: REFUSING_REGISTRY}
        argv = [
            str(OPENCODE), "run", "--pure", "--format", "json", "--title", TITLE, "--", PROMPT,
        ]  # fmt: skip
        return argv, env

    return [wall for wall, _ in bare_runs([{"response": REPLY}], runs, tmp, command)]


def main(groups: int = 10) -> dict[str, object]:
    """Median item wall time minus median bare-opencode wall time."""
    return overhead(
        "opencode-overhead",
        "bare_opencode_median_s",
        item_times("opencode"),
        _bare_times,
        PROMPT,
        REPLY,
        groups,
    )


if __name__ == "__main__":
    main()
