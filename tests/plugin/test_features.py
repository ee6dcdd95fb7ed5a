"""A loop feature is its module and its one line in `features.REGISTERED`: without the no-harm
gate's line the plugin still collects, gates and reads its options, and nothing of that gate is
left (its option and ini key, its --skill-eval-fail-on mode)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_skill_eval import features
from pytest_skill_eval.features.no_harm import NoHarmGate
from tests.support.runs import skill_eval_args


@pytest.fixture(params=["registered", "left-out"])
def no_harm(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the no-harm gate is registered for this test (`left-out`: its line deleted)."""
    registered: bool = request.param == "registered"
    if not registered:
        kept = tuple(f for f in features.REGISTERED if f is not NoHarmGate)
        monkeypatch.setattr(features, "REGISTERED", kept)
    return registered


def test_the_gates_option_and_mode_come_and_go_with_its_line(
    pytester: pytest.Pytester, no_harm: bool
) -> None:
    text = pytester.runpytest_inprocess("--help").stdout.str()
    modes = re.search(r"--skill-eval-fail-on=(\S+)", text)
    assert modes is not None
    expected = "infrastructure|candidate|any|regression|significant-regression"
    assert modes.group(1) == (f"{expected}|no-harm" if no_harm else expected)
    assert ("--skill-eval-margin=D" in text) is no_harm
    assert ("skill_eval_margin (string)" in text) is no_harm


def test_without_its_line_the_rest_collects_and_its_mode_is_refused(
    pytester: pytest.Pytester, example_root: Path, no_harm: bool
) -> None:
    args = skill_eval_args(example_root, cassettes=False)
    gate = ("--skill-eval-fail-on", "significant-regression", "--collect-only", "-q")
    assert pytester.runpytest_inprocess(*args, *gate).ret == pytest.ExitCode.OK
    mode = ("--skill-eval-fail-on", "no-harm", "--collect-only", "-q")
    result = pytester.runpytest_inprocess(*args, *mode)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    # With it, its own check runs before anything; without it, the mode is unknown.
    said = "no-harm needs a declared margin" if no_harm else '"no-harm" is not accepted'
    result.stderr.fnmatch_lines([f"*--skill-eval-fail-on {said}*"])
