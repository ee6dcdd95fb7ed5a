"""`--skill-eval-trials auto` and `--skill-eval-max-trials`: checked before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.roots import body_group, make_root
from tests.support.runs import skill_eval_args


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--skill-eval-max-trials", "3"),
            "*--skill-eval-max-trials needs --skill-eval-trials auto*",
        ),
        (
            ("--skill-eval-trials", "auto", "--skill-eval-max-trials", "1"),
            '*--skill-eval-max-trials "1" is not accepted with --skill-eval-trials auto; use 2*',
        ),
        (
            ("--skill-eval-trials", "many"),
            '*--skill-eval-trials "many" is not accepted; use a positive integer*, or auto*',
        ),
        (
            ("--skill-eval-trials", "auto", "--skill-eval-variant", "baseline"),
            "*it needs both variants*",
        ),
        (
            ("--skill-eval-trials", "auto", "--skill-eval-plan", "plan.json"),
            "*a plan fixes its trials*",
        ),
    ],
)
def test_adaptive_options_are_checked(
    pytester: pytest.Pytester, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    root = make_root(tmp_path / "root", [body_group("same")], {})
    result = pytester.runpytest(*skill_eval_args(root, *args))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
