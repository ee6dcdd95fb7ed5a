"""A merge copies the bytes its shard roots were computed over, not what a shard holds later.

A shard directory can change while a merge reads it (a CI artifact store still writing, or a
tamperer racing the merge): each test changes a shard at the one moment between the merge
computing the shard's root and using the shard, through the merge's own steps, so the race is
exact and needs no timing. The bound merge must then refuse, or merge only what it hashed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.scale import merge, models
from pytest_skill_eval.scale.intake import choose_shards
from pytest_skill_eval.scale.models import check_shard
from tests.scale.test_shard_trust import (
    _edit,
    _group,
    _merge,
    _one_error,
    _printed_roots,
    _rehash,
    _result,
    _shards,
    built,
)
from tests.support.files import read_json

pytestmark = [pytest.mark.pi, pytest.mark.codex]

__all__ = ["built"]  # the shared shard build, a fixture of this module too


def _after_hashing(monkeypatch: pytest.MonkeyPatch, change: Any) -> None:
    """Run `change()` once every shard's root is computed, before the merge uses the shards."""

    def racing(*args: Any) -> Any:
        chosen = choose_shards(*args)
        change()
        return chosen

    monkeypatch.setattr(merge, "choose_shards", racing)


def test_a_group_that_appears_in_a_bound_shard_after_hashing_is_not_merged(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _shards(built, tmp_path)
    forged = tmp_path / "forged" / _group(built, second).name
    shutil.copytree(_group(built, second), forged, symlinks=True)
    _edit(forged / "candidate" / "final.md", "done", "FORGED")
    _rehash(forged)
    target = first / _result(built) / "groups" / forged.name
    _after_hashing(monkeypatch, lambda: shutil.copytree(forged, target, symlinks=True))
    out = tmp_path / "merged"
    # Shard 1 alone, bound: shard 2's unit never arrived and is recorded missing.
    assert _merge(built, [first], out, f"--shard-root=1={_printed_roots(built)[1]}") == 1
    group = out / _result(built) / "groups" / forged.name
    run = read_json(group / "candidate" / "run.json")
    assert "shard-missing" in json.dumps(run)
    assert not any("FORGED" in p.read_text() for p in group.rglob("*") if p.is_file())


def test_a_group_rewritten_with_its_manifest_after_hashing_is_refused(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = _shards(built, tmp_path)
    group = _group(built, shards[0])
    forged = tmp_path / "forged" / group.name
    shutil.copytree(group, forged, symlinks=True)
    _edit(forged / "candidate" / "final.md", "done", "FORGED")
    _rehash(forged)

    def swap() -> None:
        shutil.rmtree(group)
        shutil.copytree(forged, group, symlinks=True)

    _after_hashing(monkeypatch, swap)
    out = tmp_path / "merged"
    bind = [f"--shard-root={k}={root}" for k, root in _printed_roots(built).items()]
    assert _merge(built, shards, out, *bind) == 1
    err = _one_error(capsys)
    assert f"{group / 'manifest.json'} changed while it was being merged" in err
    assert not (out / _result(built)).exists()


def test_a_shard_record_read_before_it_is_hashed_is_the_one_hashed(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The forged record is there when the merge reads it and the genuine one when it hashes:
    # the root must cover what was read, or forged times and spend reach the merged result.
    shards = _shards(built, tmp_path)
    path = shards[0] / "shard.json"
    genuine = path.read_bytes()
    record = read_json(path)
    record["startedAt"] = "2000-01-01T00:00:00.000Z"
    path.chmod(0o644)
    path.write_text(json.dumps(record), encoding="utf-8")

    def then_restore(data: Any, where: Path) -> str | None:
        problem = check_shard(data, where)
        if where == path.resolve():
            path.write_bytes(genuine)
        return problem

    # The merge imports its record models when it reads a shard: patched where it finds them.
    monkeypatch.setattr(models, "check_shard", then_restore)
    out = tmp_path / "merged"
    bind = [f"--shard-root={k}={root}" for k, root in _printed_roots(built).items()]
    assert _merge(built, shards, out, *bind) == 1
    assert f"not the bound sha256:{_printed_roots(built)[1]}" in _one_error(capsys)
    assert not (out / _result(built)).exists()
