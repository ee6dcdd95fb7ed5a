"""Each host's stock CLI as a new user would start it on the overheads' one turn (`PROMPT`).

The packaged command (npm `.bin` entry or packaged binary), none of the evaluator's switches,
environment knobs, compile cache or settings: only the least configuration that reaches the
loopback scripted model with the same reply (a provider entry, a key, a model the script
answers, and what a host refuses to run without, e.g. Codex outside a git repository or Gemini
CLI in an untrusted folder). The home is `base/home` (XDG directories its defaults below it);
setting it up again in the same `base` changes nothing, so a reused home stays warm.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import PROMPT
from pytest_skill_eval.hosts.binaries import PACKAGE_ROOT
from pytest_skill_eval.hosts.opencode.binary import packaged_binary as opencode_binary
from pytest_skill_eval.hosts.pi.config import pi_agent_files
from pytest_skill_eval.modelserver.gemini import GEMINI
from pytest_skill_eval.modelserver.wire import ANTHROPIC, OPENAI, OPENAI_RESPONSES

BIN = PACKAGE_ROOT / "node_modules" / ".bin"
KEY = "skill-eval-loopback"  # any key: the loopback server ignores it

# (argv, environment) of one stock run in `base`, answered by `route`.
StockCommand = Callable[[Any, Path], tuple[list[str], dict[str, str]]]


def _home(base: Path, files: dict[str, str]) -> dict[str, str]:
    """`base/home` and `base/tmp` (made if missing) with `files` (relative to the home)
    written; the environment of a user whose home it is."""
    home = base / "home"
    (base / "tmp").mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "TMPDIR": str(base / "tmp"),
    }


def pi(route: Any, base: Path) -> tuple[list[str], dict[str, str]]:
    """`pi -p` with a models.json naming the loopback provider."""
    env = _home(base, {".pi/agent/models.json": json.dumps(pi_agent_files(route))})
    return [str(BIN / "pi"), "--model", "skill-eval/scripted", "-p", PROMPT], env


def claude(route: Any, base: Path) -> tuple[list[str], dict[str, str]]:
    """`claude -p` with the endpoint and a key in its environment."""
    env = _home(base, {})
    env |= {"ANTHROPIC_BASE_URL": route.base_url(ANTHROPIC), "ANTHROPIC_API_KEY": KEY}
    return [str(BIN / "claude"), "-p", PROMPT], env


def codex(route: Any, base: Path) -> tuple[list[str], dict[str, str]]:
    """`codex exec` with a config.toml naming the loopback provider (outside a git repository
    it needs `--skip-git-repo-check`)."""
    config = "\n".join(
        [
            'model = "scripted"',
            'model_provider = "loopback"',
            "[model_providers.loopback]",
            'name = "loopback"',
            f'base_url = "{route.base_url(OPENAI_RESPONSES)}"',
            'wire_api = "responses"',
            'env_key = "LOOPBACK_KEY"',
            "",
        ]
    )
    env = _home(base, {".codex/config.toml": config}) | {"LOOPBACK_KEY": KEY}
    return [str(BIN / "codex"), "exec", "--skip-git-repo-check", PROMPT], env


def gemini(route: Any, base: Path) -> tuple[list[str], dict[str, str]]:
    """`gemini -p` with API-key auth selected, the endpoint and key in its environment, a model
    the script answers (its default routes through a classifier call first) and
    `--skip-trust` (it refuses an untrusted folder headless)."""
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    env = _home(base, {".gemini/settings.json": json.dumps(auth)})
    env |= {"GOOGLE_GEMINI_BASE_URL": route.base_url(GEMINI), "GEMINI_API_KEY": KEY}
    argv = [str(BIN / "gemini"), "--skip-trust", "--model", "gemini-2.5-flash", "-p", PROMPT]
    return argv, env


def opencode(route: Any, base: Path) -> tuple[list[str], dict[str, str]]:
    """`opencode run` with an opencode.json naming the loopback provider."""
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "options": {"baseURL": route.base_url(OPENAI), "apiKey": KEY},
        "models": {"scripted": {"name": "scripted", "tool_call": True}},
    }
    config = {"model": "loopback/scripted", "provider": {"loopback": provider}}
    env = _home(base, {".config/opencode/opencode.json": json.dumps(config)})
    binary = opencode_binary(PACKAGE_ROOT) or Path("opencode")
    return [str(binary), "run", "--title", "bench", PROMPT], env


def copilot(route: Any, base: Path) -> tuple[list[str], dict[str, str]]:
    """`copilot -p` with its bring-your-own-provider variables."""
    env = _home(base, {})
    env |= {
        "COPILOT_PROVIDER_BASE_URL": route.base_url(OPENAI),
        "COPILOT_PROVIDER_API_KEY": KEY,
        "COPILOT_MODEL": "scripted",
    }
    return [str(BIN / "copilot"), "-p", PROMPT], env


STOCK: dict[str, StockCommand] = {
    "pi": pi,
    "claude-code": claude,
    "codex": codex,
    "gemini-cli": gemini,
    "opencode": opencode,
    "copilot-cli": copilot,
}


# What makes each stock command continue the session that the last run in the same home (and
# working directory) began, as a user continues a conversation turn by turn: each host's own
# "continue the latest" option, put before `-p` where the command has one, else before the prompt.
CONTINUE: dict[str, tuple[str, ...]] = {
    "pi": ("--continue",),
    "claude-code": ("--continue",),
    "codex": ("resume", "--last"),
    "gemini-cli": ("--resume", "latest"),
    "opencode": ("--continue",),
    "copilot-cli": ("--continue",),
}


def continuing(host: str) -> Callable[[list[str]], list[str]]:
    """The argv that continues the session `host`'s stock argv began."""
    flags = CONTINUE[host]

    def again(argv: list[str]) -> list[str]:
        at = argv.index("-p") if "-p" in argv else len(argv) - 1
        return [*argv[:at], *flags, *argv[at:]]

    return again
