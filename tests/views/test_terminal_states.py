"""The terminal summary never says `[unknown]` for a result whose state the product knows."""

from __future__ import annotations

from pathlib import Path

from pytest_skill_eval.views.terminal import LEGEND, terminal_summary
from tests.support.writer import Lines


def test_a_shard_lists_the_trials_it_ran_as_unmerged_and_no_other(tmp_path: Path) -> None:
    ran, not_run = tmp_path / "20260101000000-aaaaaaaa", tmp_path / "20260101000000-bbbbbbbb"
    (ran / "groups").mkdir(parents=True)
    writer = Lines()
    terminal_summary(writer, {1: ran, 2: not_run}, shard=True)
    assert writer.lines == [
        "== skill-eval",
        LEGEND,
        f"result {ran.name} [unmerged] trial 1: {ran}",
    ]


def test_a_result_left_without_a_summary_is_unfinished(tmp_path: Path) -> None:
    result = tmp_path / "20260101000000-aaaaaaaa"
    (result / "groups").mkdir(parents=True)
    writer = Lines()
    terminal_summary(writer, {1: result})
    assert writer.lines == [
        "== skill-eval",
        LEGEND,
        f"result {result.name} [unfinished] trial 1: {result}",
    ]


def test_no_result_directory_no_section(tmp_path: Path) -> None:
    writer = Lines()
    terminal_summary(writer, {1: tmp_path / "gone"})
    assert writer.lines == []
