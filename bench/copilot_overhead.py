"""Evaluator overhead per variant on Copilot CLI vs a bare Copilot CLI on the same scripted
1-turn run.

The bare run gets what any hermetic offline Copilot CLI run needs anyway (an empty home and
COPILOT_HOME with the same settings, the same switches and unpacked package, pointed at the
same loopback server, `copilot -p …` with the same flags), so the difference is the
evaluator.
"""

from __future__ import annotations

from pathlib import Path

from bench.common import PROMPT, bare_home, item_times, one_turn_overhead
from pytest_skill_eval.hosts.binaries import PACKAGE_ROOT
from pytest_skill_eval.hosts.copilot_cli.binary import packaged_binary
from pytest_skill_eval.hosts.copilot_cli.config import (
    LOOPBACK_KEY,
    Flags,
    available_tools,
    write_settings,
)
from pytest_skill_eval.hosts.copilot_cli.environment import PACKAGE_CACHE, QUIET, package_cache
from pytest_skill_eval.hosts.copilot_cli.host import SESSION
from pytest_skill_eval.hosts.copilot_cli.registration import COPILOT_CLI
from pytest_skill_eval.modelserver.route import Route
from pytest_skill_eval.modelserver.wire import OPENAI

COPILOT = packaged_binary(PACKAGE_ROOT) or Path(COPILOT_CLI.command)


def bare_command(route: Route, base: Path) -> tuple[list[str], dict[str, str]]:
    """A bare `copilot -p` in `base`'s empty home (the evaluator's settings), answered by
    `route`."""
    env = bare_home(base, ".copilot")
    config = base / "home" / ".copilot"
    write_settings(config, base / "work")
    (config / "skills").mkdir()
    env |= {**QUIET, "COPILOT_HOME": str(config), "COPILOT_MODEL": "scripted"}
    env[PACKAGE_CACHE] = str(package_cache(COPILOT_CLI.version))
    env |= {"COPILOT_PROVIDER_BASE_URL": route.base_url(OPENAI)}
    env["COPILOT_PROVIDER_API_KEY"] = LOOPBACK_KEY
    flags = Flags(tuple(available_tools(("read",), False)), (str(config / "skills"),), None)
    argv = [str(COPILOT), "-p", PROMPT, "--session-id", SESSION, *flags.argv()]
    return [*argv, "--usage-output-file", str(base / "usage.json")], env


def main(groups: int = 10) -> dict[str, object]:
    """Median item wall time minus median bare-Copilot-CLI wall time."""
    return one_turn_overhead(
        "copilot-overhead",
        "bare_copilot_median_s",
        item_times(COPILOT_CLI.name),
        bare_command,
        groups,
    )


if __name__ == "__main__":
    main()
