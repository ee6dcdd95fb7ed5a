"""The verified-results cache over a growing history: reuse, resume and affected-since take a
remembered verification as the gate does, the cache prunes what can never match again, and it
stays this user's alone (`evidence/verified.py`)."""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import stat
from pathlib import Path

import pytest

from pytest_skill_eval.analysis.gate import pooled
from pytest_skill_eval.evidence import layout, verified
from pytest_skill_eval.run.reuse import open_source

EARLIER = "20260101000000-01234567"


def _entries() -> list[Path]:
    return sorted((verified.cache_dir() / verified.RESULTS).iterdir())


def test_a_reuse_source_remembered_as_verified_is_not_read_again_until_it_changes(
    result: Path, verifications: list[Path]
) -> None:
    # What `--skill-eval-reuse` and `--skill-eval-affected-since` open (`open_source`).
    assert [s.problem for s in open_source(result)] == [None]
    assert [s.problem for s in open_source(result)] == [None]
    assert verifications == [result]
    final = layout.variant_dir(result, "answer", "candidate") / layout.FINAL
    final.write_bytes(final.read_bytes() + b"changed")
    (source,) = open_source(result)
    assert verifications == [result, result]
    assert source.problem is not None
    assert "its seal does not verify (changed:" in source.problem


def test_a_check_that_leaves_out_no_advisory_entry_verifies_a_result_holding_one_in_full(
    result: Path, verifications: list[Path]
) -> None:
    # `skill-eval verify` (and the gate, and reuse) leave out a review added after the seal;
    # resuming does not, so a review there is verified in full, never taken as remembered.
    review = layout.group_dir(result, "answer") / layout.REVIEW
    review.write_text("a review\n", encoding="utf-8")
    assert verified.seal_problems(result, layout.ADVISORY) == []
    assert verified.seal_problems(result, layout.ADVISORY) == []
    assert verifications == [result]
    assert verified.seal_problems(result) == [f"extra: {review}"]


def test_pruning_drops_entries_that_can_never_match_and_keeps_the_rest(
    result: Path, verifications: list[Path]
) -> None:
    gone = Path(shutil.copytree(result, result.with_name(EARLIER), symlinks=True))
    assert verified.problems(result) == verified.problems(gone) == []
    kept = {e.name: e.read_text(encoding="utf-8") for e in _entries()}
    shutil.rmtree(gone)
    # An entry made by other evidence readers, one of another format, one a run left staged.
    results = verified.cache_dir() / verified.RESULTS
    token, _, path, facts = kept[_name(result)].split("\n", 3)
    (results / ("0" * 64)).write_text(f"{token}\n{'0' * 64}\n{path}\n{facts}", encoding="utf-8")
    (results / ("1" * 64)).write_text("a token of the first format\n", encoding="utf-8")
    staged = results / f".{'2' * 64}.0a0b0c0d"
    staged.write_text("half written", encoding="utf-8")
    os.utime(staged, (0, 0))
    assert verified.prune() == 4
    assert [e.name for e in _entries()] == [_name(result)]
    assert verified.problems(result) == []
    assert verifications == [result, gone]  # the live entry still stands for its result


def test_remembering_prunes_part_of_the_cache_once_per_process(
    result: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = verified.cache_dir() / verified.RESULTS
    results.mkdir(parents=True)
    (results / ("1" * 64)).write_text("a token of the first format\n", encoding="utf-8")
    monkeypatch.setattr(verified, "_pruned", set())
    monkeypatch.setattr(secrets, "choice", lambda digits: "1")  # the part to prune
    assert verified.problems(result) == []
    assert [e.name for e in _entries()] == [_name(result)]


def test_the_cache_is_this_users_alone_and_nothing_of_it_reaches_the_results_directory(
    result: Path,
) -> None:
    earlier = Path(shutil.copytree(result, result.with_name(EARLIER), symlinks=True))
    before = _tree(result.parent)
    assert pooled(result.parent, [result]).trials == [earlier, result]
    assert _tree(result.parent) == before  # the gate writes nothing where results are
    key = (verified.cache_dir() / "key").read_bytes()
    for path in [verified.cache_dir() / "key", *_entries()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for path in result.parent.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            assert key not in data, path
            assert key.hex().encode() not in data, path


def _name(result: Path) -> str:
    return hashlib.sha256(os.fsencode(os.path.realpath(result))).hexdigest()


def _tree(directory: Path) -> dict[str, tuple[int, int]]:
    """Every entry below `directory` by its inode and change time."""
    found = {}
    for path in directory.rglob("*"):
        info = path.lstat()
        found[str(path)] = (info.st_ino, info.st_ctime_ns)
    return found
