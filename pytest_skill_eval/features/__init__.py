"""The loop features as plugin objects (the way pytest's `StepwisePlugin` and `LFPlugin` are).

Each module here defines one `Feature` subclass: its options (a gate's `--skill-eval-fail-on`
mode among them), its hooks and its state, each hook delegating to a pure function in its own
layer. `REGISTERED` is the one list of them, in the order their terminal lines are written:
adding a feature is one module and one line below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .base import DECIDED_KEY, FORECAST_KEY, GATE_KEY, Feature
from .floor import NoiseFloor
from .forecast import Forecast
from .gate import SignificanceGate
from .loop import AffectedSince
from .no_harm import NoHarmGate
from .shard import ShardDeselection

if TYPE_CHECKING:
    from ..options.settings import Settings
    from ..session import SkillEvalSession

__all__ = [
    "DECIDED_KEY",
    "FORECAST_KEY",
    "GATE_KEY",
    "REGISTERED",
    "Feature",
    "add_options",
    "check_options",
    "fail_on_modes",
    "ini_keys",
    "register",
    "unregister",
]

REGISTERED: tuple[type[Feature], ...] = (
    Forecast,
    ShardDeselection,
    AffectedSince,
    NoiseFloor,
    SignificanceGate,
    NoHarmGate,
)


def fail_on_modes() -> tuple[tuple[str, str], ...]:
    """The `(mode, what it fails)` each gate adds to --skill-eval-fail-on, in order."""
    return tuple(feature.fail_on for feature in REGISTERED if feature.fail_on is not None)


def add_options(parser: pytest.Parser) -> None:
    """Register each feature's own options."""
    for feature in REGISTERED:
        feature.add_options(parser)


def ini_keys() -> tuple[str, ...]:
    """The ini keys of the features' own options."""
    names = (name for feature in REGISTERED for name, _, _ in feature.options)
    return tuple(f"skill_eval_{name.replace('-', '_')}" for name in names)


def check_options(config: pytest.Config, settings: Settings) -> None:
    """Refuse a bad value of any feature's own options, before the session opens."""
    for feature in REGISTERED:
        feature.check_options(config, settings)


def register(config: pytest.Config, state: SkillEvalSession) -> None:
    """Register each feature this process runs (the session is open, the controller prepared)."""
    for feature in REGISTERED:
        if feature.wanted(state):
            config.pluginmanager.register(feature(config, state), feature.name)


def unregister(config: pytest.Config) -> None:
    """Unregister every feature `register` registered."""
    for feature in REGISTERED:
        plugin = config.pluginmanager.get_plugin(feature.name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)
