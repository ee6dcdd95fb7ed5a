"""The one rule for what is a result in a results directory, and its order: newest first."""

from __future__ import annotations

from pathlib import Path

from pytest_skill_eval.evidence import layout
from pytest_skill_eval.evidence.locate import aggregates, is_result, results


def _result(root: Path, name: str, *files: str) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    for file in files:
        (directory / file).write_text("{}", encoding="utf-8")
    return directory


def test_a_result_is_a_directory_with_its_invocation(tmp_path: Path) -> None:
    running = _result(tmp_path, "20260101000000-aaaaaaaa", layout.INVOCATION)
    stray = _result(tmp_path, "20260101000001-bbbbbbbb", layout.SUMMARY)
    assert is_result(running)
    assert not is_result(stray)
    assert results(tmp_path) == [running]


def test_results_are_newest_first_and_filtered_by_state(tmp_path: Path) -> None:
    older = _result(tmp_path, "20260101000000-aaaaaaaa", layout.INVOCATION, layout.SUMMARY)
    sealed = _result(
        tmp_path, "20260102000000-bbbbbbbb", layout.INVOCATION, layout.SUMMARY, layout.SEAL
    )
    running = _result(tmp_path, "20260103000000-cccccccc", layout.INVOCATION)
    assert results(tmp_path) == [running, sealed, older]
    assert results(tmp_path, finished=True) == [sealed, older]
    assert results(tmp_path, sealed=True) == [sealed]
    assert results(tmp_path / "absent") == []


def test_aggregates_are_newest_first(tmp_path: Path) -> None:
    first = _result(tmp_path, "20260101000000-aaaaaaaa-agg", layout.AGGREGATE)
    second = _result(tmp_path, "20260102000000-bbbbbbbb-agg", layout.AGGREGATE)
    _result(tmp_path, "20260103000000-cccccccc", layout.INVOCATION)
    assert aggregates(tmp_path) == [second, first]
