"""Shared fixtures for the project's tests (helpers live in `tests.support`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.paths import EXAMPLE

# No example may fail for being slow: on a loaded machine a deadline measures the machine.
settings.register_profile("skill-eval", deadline=None)
settings.load_profile("skill-eval")


@pytest.fixture
def example_root(tmp_path: Path) -> Path:
    """A private copy of the example suite (results are written under its root)."""
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".skill-eval"))
    return root
