"""Workspace layers of each host: declared per host, compared by one check before each later
process. No host starts here: the layers are planted in a temporary workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_skill_eval.hosts import host_for
from pytest_skill_eval.hosts.workspace_layers import (
    WorkspaceLayer,
    WorkspaceLayerError,
    layer_state,
    unchanged,
)
from tests.support.files import write
from tests.trust.test_planted_entries import finishes, unblock

LAYERS = (
    WorkspaceLayer(".gemini/settings.json", "workspace settings"),
    WorkspaceLayer(".gemini/skills", "workspace skills"),
    WorkspaceLayer("GEMINI.md", "workspace memory"),
)


def _refusal(cwd: Path, before: dict[str, str | None]) -> str:
    with pytest.raises(WorkspaceLayerError) as refused:
        finishes(lambda: unchanged("Gemini CLI", cwd, LAYERS, before, 2))
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("Gemini CLI would read configuration the subject planted")
    assert message.endswith("turn 2 was not started")
    return message


def test_each_host_declares_its_workspace_layers() -> None:
    gemini = {layer.path for layer in host_for("gemini-cli").registration.workspace_layers}
    assert {".gemini/settings.json", ".gemini/.env", ".gemini/skills", "GEMINI.md"} <= gemini
    codex = {layer.path for layer in host_for("codex").registration.workspace_layers}
    assert {"AGENTS.md", ".codex", ".agents/skills"} <= codex
    # One process for every turn, or the host's own switches keep them all off.
    for name in ("claude-code", "opencode", "pi"):
        assert host_for(name).registration.workspace_layers == (), name


def test_what_the_workspace_started_with_is_allowed(tmp_path: Path) -> None:
    write(tmp_path / "GEMINI.md", "The group's own memory.\n")
    write(tmp_path / ".gemini" / "skills" / "own" / "SKILL.md", "x")
    before = layer_state(tmp_path, LAYERS)
    write(tmp_path / "notes.txt", "anything else may change\n")
    unchanged("Gemini CLI", tmp_path, LAYERS, before, 2)


@pytest.mark.parametrize(
    ("plant", "named"),
    [
        (".gemini/settings.json", ".gemini/settings.json (workspace settings; created)"),
        (".gemini/skills/evil/SKILL.md", ".gemini/skills (workspace skills; created)"),
        ("GEMINI.md", "GEMINI.md (workspace memory; created)"),
    ],
)
def test_a_created_layer_is_refused_by_name(tmp_path: Path, plant: str, named: str) -> None:
    before = layer_state(tmp_path, LAYERS)
    write(tmp_path / plant, "{}")
    message = _refusal(tmp_path, before)
    assert f"{tmp_path}/{named}" in message


def test_a_changed_or_removed_layer_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "GEMINI.md", "The group's own memory.\n")
    write(tmp_path / ".gemini" / "skills" / "own" / "SKILL.md", "x")
    before = layer_state(tmp_path, LAYERS)
    write(tmp_path / ".gemini" / "skills" / "own" / "extra.md", "y")  # a file added inside
    (tmp_path / "GEMINI.md").unlink()
    message = _refusal(tmp_path, before)
    assert f"{tmp_path}/.gemini/skills (workspace skills; changed)" in message
    assert f"{tmp_path}/GEMINI.md (workspace memory; removed)" in message


def test_a_layer_reached_through_a_planted_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "settings.json", "{}")
    cwd = tmp_path / "workspace"
    cwd.mkdir()
    before = layer_state(cwd, LAYERS)
    (cwd / ".gemini").symlink_to(outside)
    message = _refusal(cwd, before)
    assert f"{cwd}/.gemini/settings.json (workspace settings; created)" in message


def test_a_layer_planted_as_a_fifo_is_refused_without_being_opened(tmp_path: Path) -> None:
    before = layer_state(tmp_path, LAYERS)
    os.mkfifo(tmp_path / "GEMINI.md")  # opening it to read would block
    (tmp_path / ".gemini").mkdir()
    os.mkfifo(tmp_path / ".gemini" / "settings.json")
    try:
        message = _refusal(tmp_path, before)
    finally:
        unblock(tmp_path / "GEMINI.md")
        unblock(tmp_path / ".gemini" / "settings.json")
    assert f"{tmp_path}/GEMINI.md (workspace memory; created)" in message
