"""Shared fixtures for the project's tests (helpers live in `tests.support`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.paths import EXAMPLE


@pytest.fixture
def example_root(tmp_path: Path) -> Path:
    """A private copy of the example suite (results are written under its root)."""
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".skill-eval"))
    return root
