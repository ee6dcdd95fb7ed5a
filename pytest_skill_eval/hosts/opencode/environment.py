"""The environment opencode runs in: the switches that turn off every source of configuration,
skills, updates and traffic besides the evaluator's, and the variables of its isolation no
definition may set."""

from __future__ import annotations

from pathlib import Path

from ..environment import BASELINE_KEYS, OwnedEnvironment

# Each one verified against 1.18.33: its binary reads these names.
QUIET = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    # ~/.claude (CLAUDE.md, skills) and ~/.agents skills, and the workspace's own .opencode.
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE_SKILLS": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE_PROMPT": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    "OPENCODE_DISABLE_AUTOCOMPACT": "1",
}
# The models database opencode reads instead of its bundled models.dev snapshot (a 4.4 MB object
# literal it would otherwise evaluate on every start, about a second of CPU): an empty one, written
# into each served run's home, since the one provider such a run may use is the evaluator's,
# declared in full in opencode.json (`enabled_providers`). Live runs keep the bundled one: their
# provider's models come from it.
MODELS_PATH = "OPENCODE_MODELS_PATH"
# Its Bun runtime's JavaScriptCore without its top tier, FTL: a process lives for one turn, too
# short to repay FTL's compiles. DFG, the tier below it, stays: it compiles on a second thread
# and the turn's one thread then runs faster code, so a turn takes about a tenth less wall time
# for the same CPU as without both. Bun marks `BUN_JSC_*` as no stable interface: 1.18.33 pins
# Bun 1.3.14, which accepts this one (a name it did not know would stop every start,
# `tests/hosts/test_opencode_start_e2e.py`).
RUNTIME = {"BUN_JSC_useFTLJIT": "0"}
# Where a dependency install would go if one were ever attempted: a loopback port that refuses.
REFUSING_REGISTRY = "http://127.0.0.1:9/"
NPM_REGISTRY = "npm_config_registry"


def no_models(directory: Path) -> Path:
    """Write the empty models database of a served run into `directory`; its path."""
    models = directory / "models.json"
    models.write_text("{}\n", encoding="utf-8")
    return models


def switches(models: Path | None) -> dict[str, str]:
    """What every start sets besides its directories: the switches, the runtime's options, the
    refusing registry and, for a served run, its empty models database (`models`)."""
    env = QUIET | RUNTIME | {NPM_REGISTRY: REFUSING_REGISTRY}
    return env | ({MODELS_PATH: str(models)} if models is not None else {})


# opencode's isolation (`hosts.environment`): every name its environment sets, OPENCODE_*, which
# steer its config, database, permissions, server and endpoints, npm's settings (its installer
# reads them) and BUN_* (it is a Bun executable). A live run still inherits its provider key.
OWNED_ENVIRONMENT = OwnedEnvironment.of(
    (*BASELINE_KEYS, *QUIET, NPM_REGISTRY),
    prefixes=("OPENCODE_", "NPM_CONFIG_", "BUN_"),
)
