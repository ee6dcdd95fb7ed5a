"""Trials and their aggregate: counts, Wilson intervals and McNemar, from real scripted runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.trials import mcnemar_exact, wilson_interval
from tests.support.files import read_json
from tests.support.roots import body_group, make_root, write_answer
from tests.support.runs import aggregates, results, run

pytestmark = pytest.mark.pi


def test_wilson_interval_and_mcnemar_match_hand_computation() -> None:
    # Wilson, 2 of 3, z = 1.959964: centre (2/3 + z²/6)/(1 + z²/3) = 0.5611,
    # half-width z·sqrt(2/27 + z²/36)/(1 + z²/3) = 0.3535  →  [0.2077, 0.9385]
    low, high = wilson_interval(2, 3) or (0.0, 0.0)
    assert (round(low, 4), round(high, 4)) == (0.2077, 0.9385)
    # 1 of 3 is the mirror image.
    low, high = wilson_interval(1, 3) or (0.0, 0.0)
    assert (round(low, 4), round(high, 4)) == (0.0615, 0.7923)
    assert wilson_interval(0, 0) is None
    # McNemar exact: 2 fail-to-pass, 1 pass-to-fail → 2·(C(3,0)+C(3,1))/2³ = 1.0
    assert mcnemar_exact(2, 1) == 1.0
    # 6 vs 0 → 2·(1/64) = 0.03125
    assert mcnemar_exact(6, 0) == 0.03125
    assert mcnemar_exact(0, 0) == 1.0


def test_three_trials_with_per_trial_scripts(pytester: pytest.Pytester, tmp_path: Path) -> None:
    # Trial 1 and 2: baseline fails, candidate passes. Trial 3: the other way round.
    root = make_root(
        tmp_path / "root",
        [body_group("answer")],
        {
            "answer/baseline": write_answer("no"),
            "answer/candidate": write_answer("yes"),
            "answer/baseline-trial3": write_answer("yes"),
            "answer/candidate-trial3": write_answer("no"),
        },
    )
    result = run(pytester, root, "--skill-eval-trials", "3")
    assert result.ret == 0, result.stdout.str()
    trial_dirs = results(root)
    assert len(trial_dirs) == 3
    assert len({d.name for d in trial_dirs}) == 3
    (aggregate_dir,) = aggregates(root)
    data = read_json(aggregate_dir / "aggregate.json")
    assert data["state"] == "complete"
    assert data["requestedTrials"] == 3
    assert sorted(t["id"] for t in data["trials"]) == sorted(d.name for d in trial_dirs)
    assert data["inputs"]["identical"] is True
    (group,) = data["groups"]
    assert group["trials"] == 3
    checks = {c["id"]: c for c in group["checks"]}
    assert (checks["baseline-says-yes"]["pass"], checks["baseline-says-yes"]["fail"]) == (1, 2)
    assert (checks["candidate-says-yes"]["pass"], checks["candidate-says-yes"]["fail"]) == (2, 1)
    assert [round(x, 4) for x in checks["candidate-says-yes"]["interval"]] == [0.2077, 0.9385]
    assert [round(x, 4) for x in checks["baseline-says-yes"]["interval"]] == [0.0615, 0.7923]
    (comparison,) = group["comparisons"]
    assert comparison["transitions"]["fail-to-pass"] == 2
    assert comparison["transitions"]["pass-to-fail"] == 1
    assert comparison["mcnemarP"] == 1.0
    assert comparison["differenceUnresolved"] is True
    result.stdout.fnmatch_lines(["*comparison says-yes: fail-to-pass=2 pass-to-fail=1*unresolved*"])
