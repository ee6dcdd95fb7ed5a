"""Fixtures for workspace tests: real Git repositories built with `git init` in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.git import Git, run_git


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
