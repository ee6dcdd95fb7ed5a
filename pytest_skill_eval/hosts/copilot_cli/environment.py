"""The environment Copilot CLI runs in: its isolated home, the switches that keep it offline
and on the evaluator's provider, and the variables of its isolation no definition may set."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..environment import BASELINE_KEYS, OwnedEnvironment

# Each one verified against 1.0.102: its binary reads these names.
QUIET = {
    # No GitHub sign-in, telemetry, web tools, GitHub MCP server or update check.
    "COPILOT_OFFLINE": "true",
    "COPILOT_AUTO_UPDATE": "false",
    "COPILOT_DISABLE_TERMINAL_TITLE": "1",
    "USE_TGREP": "false",
    "NO_COLOR": "1",
}
# Where the native build unpacks its bundled package (`app.js`, its tools, its builtin skills)
# as it first starts: shared by every run of the pinned version, unpacked once by the binary
# check, so a subject's start does not write 235 MB into its home.
PACKAGE_CACHE = "COPILOT_PKG_CACHE_HOME"
# Copilot CLI's isolation (`hosts.environment`): every name its environment sets and COPILOT_*
# (home, provider, model, trust, tokens), GH_* and GITHUB_TOKEN (GitHub credentials and host)
# and OTEL_* (telemetry exporters). A live run still inherits its provider key.
OWNED_ENVIRONMENT = OwnedEnvironment.of(
    (*BASELINE_KEYS, *QUIET, "GITHUB_TOKEN", "USE_BUILTIN_RIPGREP"),
    prefixes=("COPILOT_", "GH_", "OTEL_"),
    allowed=("COPILOT_PROVIDER_API_KEY",),
)


def package_cache(version: str, environ: Mapping[str, str] = os.environ) -> Path:
    """`$XDG_CACHE_HOME/pytest-skill-eval/copilot-cli/<version>`, else under `~/.cache`."""
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-skill-eval" / "copilot-cli" / version
