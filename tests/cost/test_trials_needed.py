"""`plan --estimate --margin D | --effect E`: per comparison, the paired trials a gate needs.

No host starts. The counts are exact computations (`analysis/noninferiority.py`); the figures
are the ones docs/statistics.md shows.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "example_suites" / "changelog"


def _plan(tmp_path: Path, *extra: str) -> list[str]:
    root = tmp_path / "changelog"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".skill-eval"))
    return ["plan", str(root / "suite.json"), "--root", str(root), "--estimate", *extra]


def test_each_comparison_gets_the_trials_its_gate_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(_plan(tmp_path, "--margin", "0.2", "--effect", "0.2", "--trials", "3"))
    out = [line for line in capsys.readouterr().out.splitlines() if line.startswith("trials:")]
    assert code == 0
    asked = "alpha 0.05, power 0.8, discordant share 0.3"
    assert out == [
        line
        for name in (
            "natural-activation/skill-read-on-first-turn",
            "changelog-entry/entry-in-fixed",
            "changelog-entry/only-changelog",
        )
        for line in (
            f"trials: {name}: no harm at margin 0.2 ({asked}): 107 paired trials; "
            "--trials 3 is 104 short",
            f"trials: {name}: a regression of 0.2 caught ({asked}, Holm over 3): 124 paired "
            "trials; --trials 3 is 121 short",
        )
    ]


def test_a_wider_margin_more_discordance_or_more_power_change_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _plan(tmp_path, "--margin", "0.3", "--discordance", "0.1", "--power", "0.9")
    assert main([*base, "--alpha", "0.1", "--group", "natural-activation", "--trials", "auto"]) == 0
    out = [line for line in capsys.readouterr().out.splitlines() if line.startswith("trials:")]
    assert out == [
        "trials: natural-activation/skill-read-on-first-turn: no harm at margin 0.3 (alpha 0.1, "
        "power 0.9, discordant share 0.1): 23 paired trials"
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--power", "0.9"], "skill-eval: --power needs --margin or --effect; add one of them"),
        (["--margin", "1.5"],
         'skill-eval: --margin "1.5" is not accepted; use a number between 0 and 1, such as 0.1'),
        (["--effect", "0.5"],
         "skill-eval: --effect 0.5 exceeds --discordance 0.3: a pass rate can fall by no more "
         "than the share of trials whose arms disagree; raise --discordance"),
    ],
)  # fmt: skip
def test_a_mistake_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code = main(_plan(tmp_path, *extra))
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert err == [message]
