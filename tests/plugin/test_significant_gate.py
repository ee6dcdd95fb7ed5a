"""--skill-eval-fail-on significant-regression on real scripted runs (the fastest host).

`regresses` passes with the baseline and fails with the candidate in every trial: each trial
adds one pass-to-fail pair, so the one-sided exact McNemar p-value after n trials is 2^-n and
the sequential one after n is 2^n / C(2n, n). The gate pools the trials of earlier invocations
of the same definitions, reads grades and never writes evidence.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.support.files import read_json
from tests.support.roots import answers_root
from tests.support.runs import aggregates, results, run

pytestmark = [pytest.mark.pi, pytest.mark.codex]

GATE = ("--skill-eval-fail-on", "significant-regression")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return answers_root(
        tmp_path / "root", {"regresses/baseline": "yes", "regresses/candidate": "no"}
    )


def _evidence(root: Path) -> dict[str, str]:
    """Every file under the runs directory with its hash: what the gate must not change."""
    runs = root / ".skill-eval" / "runs"
    return {
        str(path.relative_to(runs)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(runs.rglob("*"))
        if path.is_file()
    }


def test_a_regression_over_trials_fails_the_gate_and_re_running_cannot_pass_it(
    pytester: pytest.Pytester, root: Path
) -> None:
    # One trial: a pass-to-fail flip, p = 1/2. The `regression` mode fails it; this gate not.
    single = run(pytester, root, *GATE)
    assert single.ret == 0, single.stdout.str()
    assert "significant regression" not in single.stdout.str()
    # Six more trials pool with the first: seven pass-to-fail pairs. Pooled across
    # invocations (each gated once), they take the always-valid sequential p-value,
    # 2^7 / C(14, 7) = 0.0373 <= 0.05 (one comparison: Holm adjusts nothing).
    more = run(pytester, root, *GATE, "--skill-eval-trials", "6")
    assert more.ret == 1, more.stdout.str()
    more.stdout.fnmatch_lines(
        [
            "skill-eval: significant regression: regresses/says-yes: pass-to-fail 7, "
            "fail-to-pass 0, Holm-adjusted p=0.0373 (pooled over 7 trial(s) of 2 invocation(s))"
        ]
    )
    assert read_json(aggregates(root)[-1] / "aggregate.json")["state"] == "complete"
    # Re-running in the hope of a green run: on its own trial this one would pass (p = 1/2),
    # but it only adds an eighth pass-to-fail pair to the same test.
    rerun = run(pytester, root, *GATE)
    assert rerun.ret == 1, rerun.stdout.str()
    rerun.stdout.fnmatch_lines(
        [
            "skill-eval: significant regression: regresses/says-yes: pass-to-fail 8, "
            "fail-to-pass 0, Holm-adjusted p=0.01989 (pooled over 8 trial(s) of 3 invocation(s))"
        ]
    )
    # Under a stricter alpha the gate passes (nine pairs: p = 0.0105 > 0.001), and under the
    # default mode the run exits 0. Neither changes a byte of the evidence already written.
    before = _evidence(root)
    strict = run(pytester, root, "--skill-eval-alpha", "0.001", *GATE)
    assert strict.ret == 0, strict.stdout.str()
    default = run(pytester, root)
    assert default.ret == 0, default.stdout.str()
    after = _evidence(root)
    assert {name: after[name] for name in before} == before
    assert len(results(root)) == 1 + 6 + 1 + 1 + 1


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
            "fail-to-pass 0, Holm-adjusted p=0.0373 (pooled over 7 trial(s) of 1 invocation(s))"
        ]
    )
