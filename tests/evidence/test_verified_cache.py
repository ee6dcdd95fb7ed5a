"""A result that verified is remembered, never trusted blindly: a change, a copy or a planted
token is verified in full (`evidence/verified.py`)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from pytest_skill_eval.analysis.admission import UNVERIFIED, differences
from pytest_skill_eval.analysis.gate import pooled
from pytest_skill_eval.evidence import layout, verified

COPY = "20260101000001-01234567"
EARLIER = "20260101000000-01234567"


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
