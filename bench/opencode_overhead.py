"""Evaluator overhead per variant on opencode vs a bare opencode on the same scripted 1-turn run.

The bare run gets what any hermetic opencode run needs anyway (an empty home and XDG
directories with the same generated opencode.json, the same switches, runtime options and empty
models database, pointed at the same loopback server, `opencode run --pure --format json
--title`), so the difference is the evaluator.
"""

from __future__ import annotations

from pathlib import Path

from bench.common import PROMPT, bare_home, item_times, one_turn_overhead
from pytest_skill_eval.hosts.binaries import PACKAGE_ROOT
from pytest_skill_eval.hosts.opencode.binary import packaged_binary
from pytest_skill_eval.hosts.opencode.config import OpencodeConfig
from pytest_skill_eval.hosts.opencode.environment import no_models, switches
from pytest_skill_eval.hosts.opencode.host import TITLE, quiet_installer
from pytest_skill_eval.hosts.setup import xdg_dirs
from pytest_skill_eval.modelserver.route import Route
from pytest_skill_eval.modelserver.wire import OPENAI

OPENCODE = packaged_binary(PACKAGE_ROOT) or Path("opencode")


def bare_command(route: Route, base: Path) -> tuple[list[str], dict[str, str]]:
    """A bare `opencode run` in `base`'s empty home and XDG directories (the evaluator's
    opencode.json), answered by `route`."""
    env = bare_home(base)
    home = base / "home"
    for directory in xdg_dirs(home).values():
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
    env |= {name: str(path) for name, path in xdg_dirs(home).items()}
    env |= switches(no_models(base))  # a served run's, as the evaluator starts it
    argv = [
        str(OPENCODE), "run", "--pure", "--format", "json", "--title", TITLE, "--", PROMPT,
    ]  # fmt: skip
    return argv, env


def main(groups: int = 10) -> dict[str, object]:
    """Median item wall time minus median bare-opencode wall time."""
    return one_turn_overhead(
        "opencode-overhead",
        "bare_opencode_median_s",
        item_times("opencode"),
        bare_command,
        groups,
    )


if __name__ == "__main__":
    main()
