"""Shared fixtures for the project's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "example_suites" / "changelog"
PI = REPO / "node_modules" / ".bin" / "pi"


@pytest.fixture
def example_root(tmp_path: Path) -> Path:
    """A private copy of the example suite (results are written under its root)."""
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".skill-eval"))
    return root
