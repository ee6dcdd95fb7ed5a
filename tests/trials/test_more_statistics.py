"""Newcombe's difference interval, Fisher's exact test, pass@k / pass^k and Connor's sample size.

Published values: Newcombe (1998), "Interval estimation for the difference between independent
proportions: comparison of eleven methods", Statistics in Medicine 17:873-890, Table II,
method 10 (hybrid score), to four decimals; Fisher's tea-tasting experiment (3 of 4 cups right
in each half): two-sided p = 34/70.
"""

from __future__ import annotations

import math

import pytest

from pytest_skill_eval.analysis.stats import (
    fisher_exact,
    mcnemar_sample_size,
    newcombe_difference,
    pass_at_k,
    pass_hat_k,
)
from pytest_skill_eval.analysis.trials import consistency, sample_size


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((48, 80), (56, 70), (0.0524, 0.3339)),  # example (a): 56/70 − 48/80
        ((3, 10), (9, 10), (0.1705, 0.8090)),  # (b)
        ((0, 29), (5, 56), (-0.0381, 0.1926)),  # (d)
        ((0, 20), (0, 10), (-0.1611, 0.2775)),  # (e)
        ((0, 10), (0, 10), (-0.2775, 0.2775)),  # (f)
        ((0, 20), (10, 10), (0.6791, 1.0)),  # (g)
        ((0, 10), (10, 10), (0.6075, 1.0)),  # (h)
    ],
)
def test_newcombe_hybrid_score_matches_table_ii(
    a: tuple[int, int], b: tuple[int, int], expected: tuple[float, float]
) -> None:
    found = newcombe_difference(a[0], a[1], b[0], b[1])
    assert found is not None
    difference, lower, upper = found
    assert difference == pytest.approx(b[0] / b[1] - a[0] / a[1])
    assert (round(lower, 4), round(upper, 4)) == expected


def test_newcombe_difference_needs_observations_on_both_sides() -> None:
    assert newcombe_difference(0, 0, 3, 4) is None
    assert newcombe_difference(3, 4, 0, 0) is None


def test_fisher_exact_tea_tasting() -> None:
    # Margins 4/4; 3 right of 4: tables k=3 (16/70) and k=1 (16/70) and the extremes (1/70 each).
    assert fisher_exact(3, 4, 1, 4) == pytest.approx(34 / 70, abs=1e-12)
    assert fisher_exact(4, 4, 0, 4) == pytest.approx(2 / 70, abs=1e-12)
    assert fisher_exact(2, 4, 2, 4) == pytest.approx(1.0)
    assert fisher_exact(0, 5, 0, 5) == 1.0  # nothing passed anywhere: nothing to test
    assert fisher_exact(0, 0, 3, 4) == 1.0


@pytest.mark.parametrize(
    ("n", "c", "k", "at_k", "hat_k"),
    [
        (10, 3, 1, 0.3, 0.3),  # k = 1: both are c/n
        (10, 3, 2, 1 - 21 / 45, 3 / 45),  # C(7,2)=21, C(3,2)=3, C(10,2)=45
        (10, 3, 8, 1.0, 0.0),  # n − c = 7 < 8: every draw of 8 holds a pass; c < k
        (5, 5, 5, 1.0, 1.0),  # passed every time
        (5, 4, 5, 1.0, 0.0),  # passed sometimes: pass^n tells them apart
        (5, 0, 3, 0.0, 0.0),
        (4, 2, 2, 1 - 1 / 6, 1 / 6),  # C(2,2)/C(4,2)
    ],
)
def test_pass_at_k_and_pass_hat_k(n: int, c: int, k: int, at_k: float, hat_k: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(at_k, abs=1e-12)
    assert pass_hat_k(n, c, k) == pytest.approx(hat_k, abs=1e-12)


def test_pass_at_k_rejects_k_outside_the_trials_run() -> None:
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_hat_k(3, 1, 0)


def test_consistency_reports_k_one_and_k_n() -> None:
    rows = consistency(2, 3)
    assert [r["k"] for r in rows] == [1, 3]
    assert (rows[0]["passAtK"], rows[0]["passHatK"]) == pytest.approx((2 / 3, 2 / 3))
    assert (rows[1]["passAtK"], rows[1]["passHatK"]) == (1.0, 0.0)
    assert [r["k"] for r in consistency(1, 1)] == [1]
    assert consistency(0, 0) == []


def test_connor_sample_size_by_hand() -> None:
    # p10 = 0.2, p01 = 0.1: ψ = 0.3, δ = 0.1, z = 1.959964 and 0.841621:
    # (1.959964·√0.3 + 0.841621·√0.29)² / 0.01 = (1.073516 + 0.453226)² / 0.01 = 233.09 → 234
    assert mcnemar_sample_size(20, 10, 100) == 234
    # Only the rates matter, not the counts they came from.
    assert mcnemar_sample_size(2, 1, 10) == 234
    # p10 = 0.5, p01 = 0: ψ = δ = 0.5: (1.959964·√0.5 + 0.841621·√0.25)² / 0.25 = 13.48 → 14
    assert mcnemar_sample_size(1, 0, 2) == 14
    z_a, z_b = 1.959963984540054, 0.8416212335729143
    exact = (z_a * math.sqrt(0.5) + z_b * math.sqrt(0.25)) ** 2 / 0.25
    assert 13 < exact < 14


def test_connor_sample_size_is_none_without_a_difference_to_separate() -> None:
    assert mcnemar_sample_size(0, 0, 5) is None
    assert mcnemar_sample_size(2, 2, 5) is None
    assert mcnemar_sample_size(1, 0, 0) is None


def test_sample_size_of_a_comparison_counts_the_pairs_observed() -> None:
    # 2 fail-to-pass, 1 pass-to-fail out of 10 pairs (7 concordant): 234 in all, 224 more.
    transitions = {"pass-to-pass": 4, "fail-to-fail": 3, "fail-to-pass": 2, "pass-to-fail": 1}
    assert sample_size(transitions | {"unavailable": 5}) == {"pairs": 234, "more": 224}
    assert sample_size({"pass-to-pass": 3}) is None
