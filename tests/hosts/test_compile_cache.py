"""Node's compile cache: set for a Node host only where Node keeps one, outside every home."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.hosts.compile_cache import ENV, compile_cache_env
from tests.support.files import write


def _node(directory: Path, version: str) -> str:
    """A `node` on a PATH of its own that answers `--version` with `version`."""
    write(directory / "node", f"#!/bin/sh\necho {version}\n", mode=0o755)
    return str(directory)


def test_node_22_1_and_later_gets_a_cache_per_host_and_node_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    env = compile_cache_env("pi", "0.73.1", _node(tmp_path / "n22", "v22.12.0"))
    expected = tmp_path / "cache" / "pytest-skill-eval" / "node-compile-cache"
    assert env == {ENV: str(expected / "pi-0.73.1-node-22.12.0")}
    assert Path(env[ENV]).is_dir()
    other = compile_cache_env("pi", "0.74.0", _node(tmp_path / "n23", "v23.0.1"))
    assert other == {ENV: str(expected / "pi-0.74.0-node-23.0.1")}


@pytest.mark.parametrize("version", ["v20.20.2", "v22.0.0", "not a version"])
def test_older_node_or_none_gets_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert compile_cache_env("pi", "0.73.1", _node(tmp_path / version, version)) == {}
    assert compile_cache_env("pi", "0.73.1", str(tmp_path / "empty")) == {}
    assert not (tmp_path / "cache").exists()
