"""Trials and their aggregate: counts, Wilson intervals and McNemar, from real scripted runs (on
the fastest host: the statistics read the evidence only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.files import read_json
from tests.support.roots import answers_root
from tests.support.runs import aggregates, results, run

pytestmark = [pytest.mark.pi, pytest.mark.codex]


def test_three_trials_with_per_trial_scripts(pytester: pytest.Pytester, tmp_path: Path) -> None:
    # Trial 1 and 2: baseline fails, candidate passes. Trial 3: the other way round.
    root = answers_root(
        tmp_path / "root",
        {
            "answer/baseline": "no",
            "answer/candidate": "yes",
            "answer/baseline-trial3": "yes",
            "answer/candidate-trial3": "no",
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
