"""A FIFO or unix socket a subject left in its workspace (its manifest records it by kind) is
never placed in a merged result: the merge names each one it refused, and records them in the
merged seal, so the result still verifies, and only those entries may be absent."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from pytest_skill_eval.evidence import json_bytes, verify_group
from pytest_skill_eval.evidence.copy import CopyError, copy_group_tree
from tests.scale.test_shard_trust import _group, _merge, _reseal, _result, _shards, built
from tests.support.files import read_json

pytestmark = [pytest.mark.pi, pytest.mark.codex]

__all__ = ["built"]  # the shared shard build, a fixture of this module too

REASON = "a subject left in its workspace; a merge copies regular files and links only"


def test_a_fifo_or_socket_in_a_workspace_is_refused_named_and_sealed(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shards = _shards(built, tmp_path)
    group = _group(built, shards[0])
    workspace = group / "candidate" / "workspace"
    # As a run records them: the entries by kind in the group's manifest, sealed by the shard.
    os.mkfifo(workspace / "trap")
    monkeypatch.chdir(workspace)  # a socket's path is short: bound by its relative name
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("sock")
        manifest = read_json(group / "manifest.json")
        manifest["files"]["candidate/workspace/trap"] = "fifo"
        manifest["files"]["candidate/workspace/sock"] = "socket"
        (group / "manifest.json").chmod(0o644)
        (group / "manifest.json").write_bytes(json_bytes(manifest))
        _reseal(built, shards[0])
        out = tmp_path / "merged"
        capsys.readouterr()
        assert _merge(built, shards, out) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line for line in printed if line.startswith("refused: ")] == [
        f"refused: {workspace / 'sock'} (a socket {REASON})",
        f"refused: {workspace / 'trap'} (a fifo {REASON})",
    ]
    result = out / _result(built)
    merged = result / "groups" / group.name / "candidate" / "workspace"
    assert merged.is_dir()
    assert not os.path.lexists(merged / "trap")
    assert not os.path.lexists(merged / "sock")
    [recorded] = [s for s in read_json(result / "seal.json")["shards"] if "refused" in s]
    prefix = f"{_result(built)}/groups/{group.name}/candidate/workspace"
    assert recorded["refused"] == [
        {"path": f"{prefix}/sock", "kind": "socket"},
        {"path": f"{prefix}/trap", "kind": "fifo"},
    ]
    assert skill_eval(["verify", str(result)]) == 0
    # Only an entry the manifest records by kind may be absent, refused or not.
    regular = next(p for p in merged.iterdir() if p.is_file() and not p.is_symlink())
    regular.unlink()
    rel = f"candidate/workspace/{regular.name}"
    refused = {rel, "candidate/workspace/trap", "candidate/workspace/sock"}
    assert verify_group(result / "groups" / group.name, refused) == [
        f"missing: {result / 'groups' / group.name / rel}"
    ]


def test_a_resumed_group_keeps_its_fifos_and_never_links_a_socket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--skill-eval-resume` copies the user's own finished groups the same way: a FIFO is
    # made again (never opened), a socket or device refuses the copy rather than being linked.
    workspace = tmp_path / "group" / "candidate" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "kept.txt").write_text("kept\n", encoding="utf-8")
    os.mkfifo(workspace / "trap")
    copy_group_tree(tmp_path / "group", tmp_path / "fifo")
    assert not os.path.lexists(tmp_path / "fifo" / "candidate" / "workspace" / "trap")
    copy_group_tree(tmp_path / "group", tmp_path / "resumed", fifos=True)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "resumed/candidate/workspace/trap").st_mode)
    monkeypatch.chdir(workspace)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("sock")
        with pytest.raises(CopyError, match="sock is a socket or device a subject left"):
            copy_group_tree(tmp_path / "group", tmp_path / "refused", fifos=True)
    assert not os.path.lexists(tmp_path / "refused" / "candidate" / "workspace" / "sock")
