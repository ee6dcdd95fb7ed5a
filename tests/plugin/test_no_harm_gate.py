"""--skill-eval-fail-on no-harm on real scripted runs (the fastest host).

`holds`: both arms answer "yes" except the candidate's second trial of each invocation, which
answers "no" (a pass-to-fail pair). At margin 0.5 three trials show nothing (p = 2/3), and the
gate says how many more paired trials it would take instead of passing; a re-run of eleven
trials pools with them, fourteen pairs with two pass-to-fail, and shows no harm (p = 0.0399).
`breaks`: the candidate always answers "no", worse than the baseline by more than any margin:
the gate fails it, naming the fall. The figures follow `analysis/noninferiority.py`.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.support.roots import answers_root
from tests.support.runs import run

pytestmark = [pytest.mark.codex]

GATE = ("--skill-eval-fail-on", "no-harm", "--skill-eval-margin", "0.5")


def test_no_harm_within_the_margin_is_shown_once_enough_trials_pool(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = answers_root(
        tmp_path / "root",
        {"holds/baseline": "yes", "holds/candidate": "yes", "holds/candidate-trial2": "no"},
    )
    few = run(pytester, root, *GATE, "--skill-eval-trials", "3")
    assert few.ret == 1, few.stdout.str()
    few.stdout.fnmatch_lines(
        [
            "skill-eval: no-harm gate: pooled 3 results: *",
            "skill-eval: no harm not shown: holds/says-yes: fail-to-pass 0, pass-to-fail 1 of "
            "3 pairs, p=0.6667 at margin 0.5; 15 more paired trial(s) would be needed at power "
            "0.8 (pooled over 3 trial(s) of 1 invocation(s))",
        ]
    )
    more = run(pytester, root, *GATE, "--skill-eval-trials", "11")
    assert more.ret == 0, more.stdout.str()
    more.stdout.fnmatch_lines(
        [
            "skill-eval: no-harm gate: pooled 14 results: *",
            "skill-eval: no harm: holds/says-yes: fail-to-pass 0, pass-to-fail 2 of 14 pairs, "
            "p=0.03986 at margin 0.5 (pooled over 14 trial(s) of 2 invocation(s))",
        ]
    )


def test_a_candidate_worse_beyond_the_margin_fails(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = answers_root(tmp_path / "root", {"breaks/baseline": "yes", "breaks/candidate": "no"})
    junit = tmp_path / "junit.xml"
    result = run(pytester, root, *GATE, "--skill-eval-trials", "4", f"--junitxml={junit}")
    assert result.ret == 1, result.stdout.str()
    line = (
        "no harm not shown: breaks/says-yes: fail-to-pass 0, pass-to-fail 4 of 4 pairs, p=1 at "
        "margin 0.5; its observed pass rate fell by 1, beyond the margin (pooled over 4 "
        "trial(s) of 1 invocation(s))"
    )
    result.stdout.fnmatch_lines([f"skill-eval: {line}"])
    properties = ElementTree.parse(junit).getroot().iter("property")
    assert line in [p.get("value") for p in properties if p.get("name") == "skill-eval-gate"]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            ("--skill-eval-fail-on", "no-harm"),
            "--skill-eval-fail-on no-harm needs a declared margin: add --skill-eval-margin D, "
            "such as 0.1 *",
        ),
        (
            ("--skill-eval-margin", "0.1"),
            "--skill-eval-margin 0.1 is given without --skill-eval-fail-on no-harm; *",
        ),
        (
            ("--skill-eval-fail-on", "no-harm", "--skill-eval-margin", "10%"),
            '--skill-eval-margin "10%" is not accepted; use a number between 0 and 1, such as 0.1',
        ),
    ],
)
def test_a_margin_missing_or_misplaced_is_one_usage_line(
    pytester: pytest.Pytester, tmp_path: Path, given: tuple[str, ...], said: str
) -> None:
    root = answers_root(tmp_path / "root", {"holds/baseline": "yes", "holds/candidate": "yes"})
    result = run(pytester, root, *given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {said}"])
    assert "Traceback" not in result.stderr.str()
