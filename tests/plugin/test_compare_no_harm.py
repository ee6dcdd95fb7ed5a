"""`skill-eval compare A B --fail-on no-harm --margin D`: every row must show no harm.

A and B are aggregates of copies of the committed view fixture result, so each row's counts are
known: 6/6 against 6/6 (or 0/6 against 0/6), whose Newcombe lower bound at 90% (one-sided 5%) is
−0.311.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.analysis.trials import write_aggregate
from tests.plugin.test_compare import GROUP, compare, copy_result, runs, set_check

__all__ = ["runs"]  # the fixture

NO_HARM = ("--fail-on", "no-harm")


def _aggregates(runs: Path, failing: int) -> tuple[Path, Path]:
    before = [copy_result(runs, f"a{i}") for i in range(6)]
    after = [copy_result(runs, f"b{i}") for i in range(6)]
    for trial in after[:failing]:
        set_check(trial, GROUP, "candidate-entry", "fail")
    return write_aggregate(runs, before, 6, None), write_aggregate(runs, after, 6, None)


def test_no_harm_passes_within_the_margin_and_fails_beyond_it(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = _aggregates(runs, 0)
    # Every row 6/6 against 6/6 or 0/6 against 0/6: B − A = 0 with lower bound −0.311,
    # inside a margin of 0.35.
    assert compare(capsys, str(before), str(after), *NO_HARM, "--margin", "0.35")[::2] == (0, "")
    code, _, err = compare(capsys, str(before), str(after), *NO_HARM, "--margin", "0.3")
    assert code == 1
    assert err.splitlines()[0] == (
        "skill-eval: no harm not shown: check natural-activation/baseline-reads-skill "
        "(baseline) a=0/6 b=0/6: b - a = 0, lower bound -0.311 is not above -0.3; about 7 trials "
        "per side would be needed at power 0.8"
    )


def test_a_candidate_beyond_the_margin_fails(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = _aggregates(runs, 4)
    code, _, err = compare(capsys, str(before), str(after), *NO_HARM, "--margin", "0.35")
    assert code == 1
    assert err.splitlines() == [
        f"skill-eval: no harm not shown: check {GROUP}/candidate-entry (candidate) a=6/6 b=2/6: "
        "b - a = -0.667, lower bound -0.883 is not above -0.35; about 23 trials per side "
        "would be needed at power 0.8",
        f"skill-eval: no harm not shown: comparison {GROUP}/entry-in-fixed (candidate) a=6/6 "
        "b=2/6: b - a = -0.667, lower bound -0.883 is not above -0.35; about 23 trials per side "
        "would be needed at power 0.8",
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (NO_HARM, "skill-eval: --fail-on no-harm needs a declared margin: add --margin D"),
        (("--margin", "0.1"), "skill-eval: --margin 0.1 is given without --fail-on no-harm;"),
    ],
)
def test_a_margin_missing_or_misplaced_is_one_line(
    runs: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], message: str
) -> None:
    a, b = copy_result(runs, "a"), copy_result(runs, "b")
    code, out, err = compare(capsys, str(a), str(b), *extra)
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(message)
