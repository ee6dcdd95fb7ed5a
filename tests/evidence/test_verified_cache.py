"""A result that verified is remembered, never trusted blindly: a change, a copy or a planted
token is verified in full (`evidence/verified.py`)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

import pytest_skill_eval.evidence.shard_seal as shard_seal
from pytest_skill_eval.analysis.admission import UNVERIFIED, differences
from pytest_skill_eval.analysis.gate import pooled
from pytest_skill_eval.definitions import load_definition
from pytest_skill_eval.evidence import layout, verified
from pytest_skill_eval.evidence.summary import write_invocation, write_summary
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.run import GroupRun
from pytest_skill_eval.run.variant import run_variant
from tests.support.cancelled import cancelled_environment
from tests.support.roots import body_group, make_root

RESULT = "20260101000002-01234567"
COPY = "20260101000001-01234567"
EARLIER = "20260101000000-01234567"


@pytest.fixture
def result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished, sealed result (its runs cancelled: no host), and a cache of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = make_root(tmp_path / "root", [body_group("answer")], {})
    loaded = load_definition(root / "suite.json", root, registered())
    result_dir = tmp_path / "runs" / RESULT
    result_dir.mkdir(parents=True)
    write_invocation(result_dir, {"schema_version": 1, "id": RESULT})
    env = cancelled_environment(root)
    run = GroupRun(loaded.groups[0], lambda trial: result_dir, 1)
    for name in ("baseline", "candidate"):
        run_variant(run, name, env)
    run.finalise(env)
    write_summary(result_dir, 1)
    return result_dir


@pytest.fixture
def verifications(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each result `skill-eval verify`'s code reads in full, in order."""
    seen: list[Path] = []
    real = shard_seal.verify

    def verify(result: Path) -> list[str]:
        seen.append(result)
        return real(result)

    monkeypatch.setattr(shard_seal, "verify", verify)
    return seen


def _entry(result: Path) -> Path:
    name = hashlib.sha256(os.fsencode(os.path.realpath(result))).hexdigest()
    return verified.cache_dir() / "results" / name


def test_a_result_that_verified_is_not_read_again_until_a_file_of_it_changes(
    result: Path, verifications: list[Path]
) -> None:
    assert differences(result) == []
    assert differences(result) == []
    assert verifications == [result]  # the second time it was remembered
    # The same size and modification time, other bytes: the change time and the re-read see it.
    run_json = layout.variant_dir(result, "answer", "baseline") / layout.RUN
    before = os.stat(run_json)
    data = bytearray(run_json.read_bytes())
    data[-2:-1] = b" " if data[-2:-1] != b" " else b"\n"
    run_json.write_bytes(bytes(data))
    os.utime(run_json, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(run_json).st_size == before.st_size
    problems = differences(result)
    assert verifications == [result, result]
    assert any(line.startswith("changed:") and "baseline" in line for line in problems)


def test_a_planted_result_with_a_planted_token_is_still_verified_in_full(
    result: Path, verifications: list[Path]
) -> None:
    assert differences(result) == []
    # Planted beside it: a copy with one file changed, its times kept, and tokens for it (the
    # verified result's own, and an unkeyed digest of the copy's entries).
    planted = _plant(result, COPY)
    for token in (
        _entry(result).read_text(encoding="ascii"),
        hashlib.sha256(str(verified.stat_digest(planted)).encode()).hexdigest(),
    ):
        _entry(planted).write_text(token, encoding="ascii")
        problems = differences(planted)
        assert verifications[-1] == planted
        assert any(line.startswith("changed:") for line in problems), problems


def test_a_key_others_can_read_is_never_used(result: Path, verifications: list[Path]) -> None:
    assert differences(result) == []
    key = verified.cache_dir() / "key"
    key.chmod(0o644)
    verified._keys.clear()
    assert differences(result) == []
    assert verifications == [result, result]


def _plant(source: Path, name: str) -> Path:
    """A copy of `source` named `name` beside it, one file changed with its times kept."""
    planted = source.with_name(name)
    shutil.copytree(source, planted, symlinks=True)
    grade = layout.group_dir(planted, "answer") / layout.GRADE
    before = os.stat(grade)
    grade.write_bytes(grade.read_bytes().replace(b"{", b" {", 1))
    os.utime(grade, ns=(before.st_atime_ns, before.st_mtime_ns))
    return planted


def test_the_gate_sets_aside_a_planted_result_whose_token_it_did_not_make(
    result: Path, verifications: list[Path]
) -> None:
    earlier = result.with_name(EARLIER)
    shutil.copytree(result, earlier, symlinks=True)
    assert pooled(result.parent, [result]).trials == [earlier, result]
    assert pooled(result.parent, [result]).trials == [earlier, result]
    assert verifications == [earlier]  # remembered with what the gate read of it
    planted = _plant(earlier, COPY)
    _entry(planted).write_text(_entry(earlier).read_text(encoding="utf-8"), encoding="utf-8")
    pool = pooled(result.parent, [result])
    assert pool.set_aside.reasons == {UNVERIFIED: [COPY]}
    assert verifications == [earlier, planted]
