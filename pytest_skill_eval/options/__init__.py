"""The plugin's on switch and how a feature reads its own option. A pytest run without
--skill-eval imports this and `declared.py`, which names the options (and the controller
`nearby.py`, for its hint); `settings.py` reads them once into a frozen `Settings`, imported
only when the plugin is enabled.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..errors import SkillEvalError


def enabled(config: pytest.Config) -> bool:
    """The plugin acts only when definitions were given (--skill-eval or its ini key)."""
    return bool(definitions(config))


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker (read without importing xdist or `xdist.py`)."""
    return hasattr(config, "workerinput")


def definitions(config: pytest.Config) -> list[Path]:
    """--skill-eval paths (relative to the invocation directory), else the ini key's."""
    given = config.getoption("--skill-eval")
    if given:
        invoked = Path(config.invocation_params.dir)
        return [path if path.is_absolute() else invoked / path for path in map(Path, given)]
    return [Path(path) for path in config.getini("skill_eval_definitions")]


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """Turn an own error raised while checking the setup (a missing Pi) into a usage error."""
    try:
        yield
    except SkillEvalError as error:
        raise pytest.UsageError(str(error)) from None


def option(config: pytest.Config, name: str) -> Any:
    """A --skill-eval-NAME option, else its skill_eval_NAME ini key (a feature reads its own
    options with it)."""
    value = config.getoption(f"--skill-eval-{name}")
    if value is None:
        value = config.getini(f"skill_eval_{name.replace('-', '_')}")
    return value
