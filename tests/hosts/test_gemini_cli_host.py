"""Gemini CLI's launch without starting it: the settings it is given and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.base import Endpoint, Launch
from pytest_skill_eval.hosts.gemini_cli.host import (
    REGISTRY_LOCK,
    GeminiCliHost,
    env_files_above,
    release_stale_lock,
)
from pytest_skill_eval.hosts.layers import SystemLayerError
from pytest_skill_eval.hosts.runtime import NodeBinary


def _launch(cwd: Path, tmp_path: Path) -> Launch:
    return Launch(
        cwd=cwd,
        prompts=("Hello.",),
        one_shot=False,
        events_path=tmp_path / "events.jsonl",
        stderr_path=tmp_path / "stderr.log",
        tools=("read",),
        guard=True,
    )


def test_an_environment_file_above_the_workspace_stops_the_subject(tmp_path: Path) -> None:
    workspace = tmp_path / "project" / "runs" / "workspace"
    workspace.mkdir(parents=True)
    planted = tmp_path / "project" / ".gemini" / ".env"
    planted.parent.mkdir()
    planted.write_text("GEMINI_SYSTEM_MD=/tmp/other.md\n", encoding="utf-8")
    assert env_files_above(workspace) == [planted]
    host = GeminiCliHost()
    (tmp_path / "home").mkdir()
    home = host.prepare(tmp_path / "home", Endpoint(mode="live", model=None))
    binary = NodeBinary(Path("/usr/bin/gemini"), "0.61.0")
    with pytest.raises(SystemLayerError, match=f"environment file {planted} above the workspace"):
        host.command(binary, _launch(workspace, tmp_path), home)
    planted.unlink()
    argv = host.command(binary, _launch(workspace, tmp_path), home).argv
    assert argv[-1] == "--prompt=Hello."
    settings = json.loads((home.config / "settings.json").read_text(encoding="utf-8"))
    assert settings["tools"]["core"] == ["read_file"]  # no skills: no activate_skill, no shell
    assert settings["context"]["memoryBoundaryMarkers"] == []
    assert "BeforeTool" in settings["hooks"]


def test_only_the_empty_lock_directory_an_exited_gemini_leaves_is_released(
    tmp_path: Path,
) -> None:
    lock = tmp_path / REGISTRY_LOCK
    assert release_stale_lock(tmp_path) is False  # none there
    lock.mkdir(parents=True)
    assert release_stale_lock(tmp_path) is True
    assert not lock.exists()
    assert (tmp_path / ".gemini").is_dir()
    # What proper-lockfile never makes is left alone: a link is not followed, contents stay.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lock.symlink_to(elsewhere, target_is_directory=True)
    assert release_stale_lock(tmp_path) is False
    assert lock.is_symlink()
    assert elsewhere.is_dir()
    lock.unlink()
    (lock / "kept").mkdir(parents=True)
    assert release_stale_lock(tmp_path) is False
    assert (lock / "kept").is_dir()
