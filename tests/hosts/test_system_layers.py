"""System-wide and managed layers of each host: declared per host, refused by one check, on record.

No host starts here: the layers are planted in a temporary directory and the run record comes
from a subject whose binary is missing (it is still a run on record)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_skill_eval.definitions import Group as GroupModel
from pytest_skill_eval.definitions.loader import parse_group
from pytest_skill_eval.evidence.records import RunRecord
from pytest_skill_eval.hosts import check_layers, host_for
from pytest_skill_eval.hosts.claude_code.binary import ClaudeCodeBinary
from pytest_skill_eval.hosts.layers import SystemLayer, SystemLayerError, kept_out
from pytest_skill_eval.hosts.process import CancelToken
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.hosts.subject import Endpoint, run_subject
from pytest_skill_eval.workspace import SourceResolver
from pytest_skill_eval.workspace.materialise import PreparedVariant, prepare_group, prepare_variant
from tests.support.files import write
from tests.support.registry import changed
from tests.support.roots import Group, runtime, variant
from tests.trust.test_planted_entries import finishes, unblock


def test_each_host_declares_its_layers_in_its_own_subpackage() -> None:
    claude = {str(layer.path) for layer in host_for("claude-code").registration.system_layers}
    assert {
        "/etc/claude-code/managed-settings.json",
        "/etc/claude-code/managed-settings.d",
        "/etc/claude-code/managed-mcp.json",
        "/etc/claude-code/CLAUDE.md",
        "/etc/claude-code/.claude",
    } <= claude
    assert {str(layer.path) for layer in host_for("codex").registration.system_layers} == {
        "/etc/codex/config.toml",
        "/etc/codex/managed_config.toml",
        "/etc/codex/requirements.toml",
        "/etc/codex/skills",
        "/etc/codex/rules",
    }
    # Pi reads nothing system-wide; what lies above the workspace is off by its flags.
    assert host_for("pi").registration.system_layers == ()


def test_absent_layers_are_recorded_and_a_present_one_is_refused_by_name(tmp_path: Path) -> None:
    layers = (
        SystemLayer(tmp_path / "managed-settings.json", "managed settings"),
        SystemLayer(tmp_path / "managed-settings.d", "managed settings drop-ins"),
        SystemLayer(tmp_path / "CLAUDE.md", "managed memory"),
    )
    assert kept_out("Claude Code", layers) == [
        {"path": str(tmp_path / "managed-settings.json"), "kept": "absent"},
        {"path": str(tmp_path / "managed-settings.d"), "kept": "absent"},
        {"path": str(tmp_path / "CLAUDE.md"), "kept": "absent"},
    ]
    (tmp_path / "managed-settings.d").mkdir()
    (tmp_path / "CLAUDE.md").symlink_to(tmp_path / "nowhere")  # dangling: still a layer
    with pytest.raises(SystemLayerError) as refused:
        kept_out("Claude Code", layers)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("Claude Code would read system-wide configuration")
    assert f"{tmp_path / 'managed-settings.d'} (managed settings drop-ins: empty)" in message
    assert f"{tmp_path / 'CLAUDE.md'} (managed memory)" in message
    assert "managed-settings.json" not in message


def test_a_layer_planted_as_a_fifo_or_a_link_loop_is_refused_without_being_opened(
    tmp_path: Path,
) -> None:
    layers = (
        SystemLayer(tmp_path / "managed-settings.json", "managed settings"),
        SystemLayer(tmp_path / "managed-settings.d", "managed settings drop-ins"),
    )
    os.mkfifo(tmp_path / "managed-settings.json")  # opening it to read would block
    (tmp_path / "managed-settings.d").symlink_to(tmp_path / "managed-settings.d")
    try:
        with pytest.raises(SystemLayerError) as refused:
            finishes(lambda: kept_out("Claude Code", layers))
    finally:
        unblock(tmp_path / "managed-settings.json")
    message = str(refused.value)
    assert f"{tmp_path / 'managed-settings.json'} (managed settings)" in message
    assert f"{tmp_path / 'managed-settings.d'} (managed settings drop-ins)" in message


def test_the_shared_check_reads_the_hosts_declaration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = tmp_path / "managed-mcp.json"
    write(planted, "{}")
    changed(
        monkeypatch, "claude-code", system_layers=(SystemLayer(planted, "managed MCP servers"),)
    )
    with pytest.raises(SystemLayerError, match=f"{planted} \\(managed MCP servers\\)"):
        check_layers("claude-code")
    check_layers("pi")  # no layers: nothing to refuse


def _claude_subject(tmp_path: Path) -> tuple[GroupModel, PreparedVariant]:
    """A Claude Code group and its prepared candidate."""
    root = tmp_path / "root"
    root.mkdir()
    definition = Group(
        id="layers",
        turns=["Hello."],
        tools=["read"],
        fixture=None,
        runtime=runtime(host="claude-code"),
        candidate=variant(),
    ).definition()
    group = parse_group(definition, root / "group.json", registered())
    group_dir = tmp_path / "result" / "groups" / "layers@claude-code"
    resources = prepare_group(group, root, group_dir)
    prepared = prepare_variant(
        group, "candidate", root, group_dir / "candidate", resources, SourceResolver(root)
    )
    return group, prepared


def _run_missing_claude(group: GroupModel, prepared: PreparedVariant, tmp_path: Path) -> RunRecord:
    """Run the subject on a Claude Code binary that is missing: still a run on record."""
    result = run_subject(
        group=group,
        prepared=prepared,
        binary=ClaudeCodeBinary(tmp_path / "missing" / "claude", "2.1.332"),
        endpoint=Endpoint(mode="scripted", model=None, requests=list),
        cancel=CancelToken(),
    )
    return result.run


def test_the_run_record_says_how_each_layer_was_kept_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layers = (SystemLayer(tmp_path / "etc" / "managed-settings.json", "managed settings"),)
    changed(monkeypatch, "claude-code", system_layers=layers)

    run = _run_missing_claude(*_claude_subject(tmp_path), tmp_path)

    assert run["systemLayers"] == [
        {"path": str(tmp_path / "etc" / "managed-settings.json"), "kept": "absent"}
    ]
    json.dumps(run)


def test_a_layer_that_appears_after_the_up_front_check_stops_the_subject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = tmp_path / "etc" / "managed-settings.json"
    changed(monkeypatch, "claude-code", system_layers=(SystemLayer(planted, "managed settings"),))
    group, prepared = _claude_subject(tmp_path)
    write(planted, '{"env": {"LEAK": "1"}}')

    with pytest.raises(SystemLayerError, match=f"{planted} \\(managed settings\\)"):
        _run_missing_claude(group, prepared, tmp_path)
    # The subject was never launched: not even an empty request log was left.
    assert not (prepared.directory / "model-requests.jsonl").exists()
