"""--skill-eval-fail-on significant-regression on real scripted runs (the fastest host).

`regresses` passes with the baseline and fails with the candidate in every trial: each trial
adds one pass-to-fail pair, so the one-sided exact McNemar p-value after n trials is 2^-n and
the sequential one after n is 2^n / C(2n, n). The gate reads grades and never writes evidence.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.support.files import read_json
from tests.support.roots import body_group, make_root, on_fast_host, write_answer
from tests.support.runs import aggregates, results, run

pytestmark = [pytest.mark.pi, pytest.mark.codex]

GATE = ("--skill-eval-fail-on", "significant-regression")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(
        tmp_path / "root",
        [body_group("regresses", **on_fast_host())],
        {"regresses/baseline": write_answer("yes"), "regresses/candidate": write_answer("no")},
    )


def _evidence(root: Path) -> dict[str, str]:
    """Every file under the runs directory with its hash: what the gate must not change."""
    runs = root / ".skill-eval" / "runs"
    return {
        str(path.relative_to(runs)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(runs.rglob("*"))
        if path.is_file()
    }


def test_a_regression_over_trials_fails_the_gate_and_one_flip_does_not(
    pytester: pytest.Pytester, root: Path
) -> None:
    # One trial: a pass-to-fail flip, p = 1/2. The `regression` mode fails it; this gate not.
    single = run(pytester, root, *GATE)
    assert single.ret == 0, single.stdout.str()
    assert "significant regression" not in single.stdout.str()
    # Five trials, all pass-to-fail: p = 1/32 <= 0.05 (one comparison: Holm adjusts nothing).
    five = run(pytester, root, *GATE, "--skill-eval-trials", "5")
    assert five.ret == 1, five.stdout.str()
    five.stdout.fnmatch_lines(
        [
            "skill-eval: significant regression: regresses/says-yes: pass-to-fail 5, "
            "fail-to-pass 0, Holm-adjusted p=0.03125"
        ]
    )
    assert read_json(aggregates(root)[-1] / "aggregate.json")["state"] == "complete"
    # The same five trials' evidence under the default mode: exit 0. Under a stricter alpha
    # the gate passes too. Neither gate changes a byte of the evidence already written.
    before = _evidence(root)
    again = run(pytester, root, "--skill-eval-trials", "5", "--skill-eval-alpha", "0.01", *GATE)
    assert again.ret == 0, again.stdout.str()
    default = run(pytester, root, "--skill-eval-trials", "5")
    assert default.ret == 0, default.stdout.str()
    after = _evidence(root)
    assert {name: after[name] for name in before} == before
    assert len(results(root)) == 1 + 5 + 5 + 5


def test_adaptive_trials_gate_on_the_sequential_p_value(
    pytester: pytest.Pytester, root: Path
) -> None:
    # Seven pass-to-fail pairs resolve the sequential test (E = 26.8 >= 20); the gate's
    # always-valid p-value is then 2^7 / C(14, 7) = 0.0373.
    result = run(
        pytester, root, *GATE, "--skill-eval-trials", "auto", "--skill-eval-max-trials", "8"
    )
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "skill-eval: significant regression: regresses/says-yes: pass-to-fail 7, "
            "fail-to-pass 0, Holm-adjusted p=0.0373"
        ]
    )
