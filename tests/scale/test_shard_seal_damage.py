"""A damaged shard seal or merged seal is one line naming the file, never a traceback: a leaf
without its digest, or a leaf name that is a lone surrogate (valid JSON, not hashable text)."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from pytest_skill_eval.evidence.seal import seal_root
from tests.scale.test_shard_trust import (
    G0,
    _bound,
    _group,
    _merge,
    _one_error,
    _result,
    _shards,
    built,
)
from tests.support.files import read_json

pytestmark = [pytest.mark.pi, pytest.mark.codex]

__all__ = ["built"]  # the shared shard build, a fixture of this module too

SURROGATE = "\ud800"  # `"\ud800"` in JSON: it parses, but no UTF-8 text holds it


def _write(path: Path, value: Any) -> None:
    path.chmod(0o644)
    path.write_text(json.dumps(value), encoding="utf-8")  # ASCII: the surrogate as an escape


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda s: s["shards"][0]["leaves"].append({"name": "x"}), id="shard-leaf"),
        pytest.param(
            lambda s: s["shards"][0]["leaves"].append({"name": SURROGATE, "sha256": None}),
            id="shard-leaf-name",
        ),
        pytest.param(lambda s: s["leaves"].append({"name": "x"}), id="leaf"),
        pytest.param(lambda s: s["leaves"].append({"name": SURROGATE, "sha256": None}), id="name"),
    ],
)
def test_a_damaged_merged_seal_is_reported_not_raised(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any
) -> None:
    out = tmp_path / "merged"
    assert _merge(built, _shards(built, tmp_path), out) == 0
    result = out / _result(built)
    seal = read_json(result / "seal.json")
    damage(seal)
    with contextlib.suppress(KeyError, ValueError):
        seal["root"] = seal_root(seal["leaves"])  # consistent, where it can be
    _write(result / "seal.json", seal)
    capsys.readouterr()
    # A shape the reader refuses is damage (exit 2); one it reads but cannot hash, a damaged
    # seal among the differences (exit 1): either way one line naming the seal.
    status = skill_eval(["verify", str(result)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    named = [
        line
        for line in (captured.out + captured.err).splitlines()
        if str(result / "seal.json") in line and "damaged" in line
    ]
    assert len(named) == 1
    assert status == (2 if named[0].startswith("skill-eval: ") else 1)


def test_a_shard_seal_leaf_named_by_a_lone_surrogate_is_one_line(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = _shards(built, tmp_path)
    seal = shards[0] / "shard-seal.json"
    _write(seal, {"leaves": [{"name": SURROGATE, "sha256": "0" * 64}], "root": "0" * 64})
    out = tmp_path / "merged"
    assert _merge(built, shards, out) == 1
    assert f"{seal}: its root is not the hash of its leaves" in _one_error(capsys)
    shutil.rmtree(out, ignore_errors=True)


def test_an_empty_directory_added_to_a_shard_or_the_merged_result_fails(
    built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The shard's manifests list its directories: one added after it sealed is refused by a
    # merge bound to the roots its log printed, as by an unbound one.
    shards = _shards(built, tmp_path)
    added = _group(built, shards[0]) / "candidate" / "planted"
    added.mkdir()
    assert _merge(built, shards, tmp_path / "refused", *_bound(built)) == 1
    err = capsys.readouterr().err
    assert f"from {added.parent.parent} does not match its manifest" in err
    assert err.rstrip().endswith("/candidate/planted/ (a directory)")
    assert not (tmp_path / "refused" / _result(built)).exists()
    added.rmdir()
    out = tmp_path / "merged"
    assert _merge(built, shards, out, *_bound(built)) == 0
    (root,) = re.findall(r"^merged: .* seal sha256:([0-9a-f]{64})$", capsys.readouterr().out, re.M)
    result = out / _result(built)
    assert skill_eval(["verify", str(result), "--seal", f"sha256:{root}"]) == 0
    capsys.readouterr()
    planted = result / "groups" / G0 / "baseline" / "planted"
    planted.mkdir()
    assert skill_eval(["verify", str(result), "--seal", f"sha256:{root}"]) == 1
    assert capsys.readouterr().out.splitlines() == [f"extra: {planted}/ (a directory)"]
