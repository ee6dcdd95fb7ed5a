"""A shard delivers only the units the plan gives it, and a merge never writes into a shard:
a group moved to the other shard (both re-sealed) is refused even unbound, and an `-o` inside a
shard, or a link planted in one, writes nothing. A link is merged as evidence only inside a
subject's workspace, not in a folder that merely has its name."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.evidence import json_bytes
from tests.scale.test_shard_trust import (
    _bound,
    _group,
    _merge,
    _one_error,
    _rehash,
    _reseal,
    _result,
    _shards,
    built,
)
from tests.support.files import read_json

pytestmark = [pytest.mark.pi, pytest.mark.codex]

__all__ = ["built"]  # the shared shard build, a fixture of this module too


@pytest.mark.parametrize("swap", [False, True], ids=["moved", "swapped"])
def test_a_unit_delivered_by_another_shard_is_refused_even_unbound(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], swap: bool
) -> None:
    first, second = _shards(built, tmp_path)
    g0, g1 = _group(built, first), _group(built, second)
    g0.rename(second / _result(built) / "groups" / g0.name)
    if swap:
        g1.rename(first / _result(built) / "groups" / g1.name)
    _reseal(built, first)
    _reseal(built, second)  # each shard matches its own seal: only the plan can tell
    out = tmp_path / "merged"
    assert _merge(built, [first, second], out) == 1
    err = _one_error(capsys)
    assert "is a unit of shard " in err
    assert "a shard delivers only the units the plan gives it" in err
    assert not (out / _result(built)).exists()


def test_an_output_inside_a_shard_is_refused(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = _shards(built, tmp_path)
    out = shards[0] / "merged"
    assert _merge(built, shards, out, *_bound(built)) == 1
    assert f"-o {out} is inside the shard {shards[0]}" in _one_error(capsys)
    assert not out.exists()


def test_an_output_linked_from_inside_a_shard_is_refused(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A link the shard's sender planted, where the merge was told to write.
    shards = _shards(built, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (shards[1] / "results").symlink_to(elsewhere, target_is_directory=True)
    assert _merge(built, shards, shards[1] / "results", *_bound(built)) == 1
    assert f"is inside the shard {shards[1]}" in _one_error(capsys)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(
    "where", ["resources/workspace", "candidate/turns/x/workspace", "elsewhere/workspace"]
)
def test_a_link_in_a_folder_named_workspace_outside_a_subjects_is_refused(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    shards = _shards(built, tmp_path)
    group = _group(built, shards[0])
    (group / where).mkdir(parents=True)
    (group / where / "planted").symlink_to("/etc/passwd")
    manifest = read_json(group / "manifest.json")
    manifest["files"][f"{where}/planted"] = ""
    (group / "manifest.json").chmod(0o644)
    (group / "manifest.json").write_bytes(json_bytes(manifest))
    _rehash(group)
    _reseal(built, shards[0])
    out = tmp_path / "merged"
    assert _merge(built, shards, out) == 1
    assert f"{group / where / 'planted'} is a symlink" in _one_error(capsys)
    assert not (out / _result(built)).exists()
