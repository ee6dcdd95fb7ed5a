"""Fixtures for workspace tests: real Git repositories built with `git init` in tmp_path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Test helpers are a plain sibling module; no test directory is on sys.path by default.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from workspace_helpers import Git, run_git  # noqa: E402


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty Git repository."""
    path = tmp_path / "repo"
    path.mkdir()
    run_git(path, "init", "-q")
    return path


@pytest.fixture
def git(repo: Path) -> Git:
    """Run git inside the `repo` fixture."""

    def call(*args: str) -> str:
        return run_git(repo, *args)

    return call
