"""Tests parametrised over hosts: each host's name as a parameter carrying its pytest mark, so
`-m 'not claude'` and the like leave out what needs a host that is not installed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

# Pi and opencode are installed with the project's own packages: no mark of their own.
MARKS = {
    "claude-code": pytest.mark.claude,
    "codex": pytest.mark.codex,
    "gemini-cli": pytest.mark.gemini,
}


def host_params(names: Iterable[str]) -> list[Any]:
    """Each of `names` as a test parameter with its host's mark, named after the host."""
    return [pytest.param(name, marks=MARKS.get(name, ()), id=name) for name in names]
