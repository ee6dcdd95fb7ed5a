"""Merging the same shards again says "already merged" only for the very results that merge
writes: a result edited and re-sealed under `-o`, or one merged unbound where this merge is
bound, is other evidence, refused, and its root is never printed as this merge's."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from pytest_skill_eval.evidence import json_bytes
from pytest_skill_eval.evidence.seal import seal_root
from tests.scale.test_shard_trust import _bound, _merge, _one_error, _result, _shards, built
from tests.support.files import read_json

pytestmark = [pytest.mark.pi, pytest.mark.codex]

__all__ = ["built"]  # the shared shard build, a fixture of this module too

ALREADY = re.compile(r"^already merged: ", re.M)


def test_the_same_bound_merge_again_is_already_merged_with_the_same_root(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards, out = _shards(built, tmp_path), tmp_path / "merged"
    assert _merge(built, shards, out, *_bound(built)) == 0
    (root,) = re.findall(r"^merged: \S+ seal (sha256:\S+)$", capsys.readouterr().out, re.M)
    assert _merge(built, shards, out, *_bound(built)) == 0
    assert f"already merged: {out / _result(built)} seal {root}" in capsys.readouterr().out


def test_a_merged_summary_edited_and_resealed_is_not_already_merged(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards, out = _shards(built, tmp_path), tmp_path / "merged"
    assert _merge(built, shards, out, *_bound(built)) == 0
    result = out / _result(built)
    summary = result / "summary.json"
    record = read_json(summary)
    record["state"] = "complete" if record["state"] != "complete" else "partially-complete"
    summary.chmod(0o644)
    summary.write_bytes(json_bytes(record))
    seal = read_json(result / "seal.json")
    for leaf in seal["leaves"]:
        if leaf["name"] == "summary.json":
            leaf["sha256"] = hashlib.sha256(summary.read_bytes()).hexdigest()
    seal["root"] = seal_root(seal["leaves"])
    (result / "seal.json").chmod(0o644)
    (result / "seal.json").write_bytes(json_bytes(seal))
    capsys.readouterr()
    assert _merge(built, shards, out, *_bound(built)) == 1
    captured = capsys.readouterr()
    assert not ALREADY.search(captured.out)
    assert f"{result} already exists and holds other evidence" in captured.err
    assert f"{summary} is not the summary of its groups" in captured.err


def test_a_result_merged_unbound_is_not_already_merged_by_a_bound_merge(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards, out = _shards(built, tmp_path), tmp_path / "merged"
    assert _merge(built, shards, out) == 0
    capsys.readouterr()
    assert _merge(built, shards, out) == 0  # unbound again: the same result, said unbound
    again = capsys.readouterr().out
    assert ALREADY.search(again)
    assert "unbound: shards 1, 2 merged without a root" in again
    assert _merge(built, shards, out, *_bound(built)) == 1
    err = _one_error(capsys)
    assert f"{out / _result(built) / 'seal.json'} records other shards, roots or bindings" in err
    assert [
        s["bound"] for s in json.loads((out / _result(built) / "seal.json").read_text())["shards"]
    ] == [False, False]
