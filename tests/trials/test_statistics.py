"""The trial statistics against textbook values: Wilson score intervals and exact McNemar tests.

Published values: Newcombe (1998), "Two-sided confidence intervals for the single proportion:
comparison of seven methods", Statistics in Medicine 17:857-872, Table II (method 3, Wilson
score without continuity correction), to four decimals.
"""

from __future__ import annotations

import math

import pytest

from pytest_skill_eval.analysis.trials import ALPHA, Z95, mcnemar_exact, wilson_interval


def _rounded(interval: tuple[float, float] | None) -> tuple[float, float]:
    __tracebackhide__ = True
    assert interval is not None
    return round(interval[0], 4), round(interval[1], 4)


def test_z_is_the_two_sided_95_percent_normal_quantile() -> None:
    # Φ(z) = 0.975, so the central mass between -z and z is 0.95.
    assert math.erf(Z95 / math.sqrt(2)) == pytest.approx(0.95, abs=1e-12)
    assert ALPHA == 0.05


@pytest.mark.parametrize(
    ("passes", "total", "expected"),
    [
        (81, 263, (0.2553, 0.3662)),
        (15, 148, (0.0624, 0.1605)),
        (0, 20, (0.0, 0.1611)),
        (1, 29, (0.0061, 0.1718)),
    ],
)
def test_wilson_interval_matches_newcombe_table_ii(
    passes: int, total: int, expected: tuple[float, float]
) -> None:
    assert _rounded(wilson_interval(passes, total)) == expected


def test_wilson_interval_of_no_pass_in_three_trials() -> None:
    # With no passes the upper bound is z² / (n + z²): three failures still allow a 56% rate.
    lower, upper = wilson_interval(0, 3) or (math.nan, math.nan)
    # Exactly 0, not centre - half (about 6e-17 after rounding): the interval holds 0/3.
    assert lower == 0.0
    assert upper == pytest.approx(Z95**2 / (3 + Z95**2), abs=1e-12)
    assert _rounded((lower, upper)) == (0.0, 0.5615)


def test_wilson_interval_of_three_passes_in_three_trials_mirrors_zero() -> None:
    assert _rounded(wilson_interval(3, 3)) == (0.4385, 1.0)
    assert (wilson_interval(3, 3) or (0.0, 0.0))[1] == 1.0
    low, high = wilson_interval(0, 3) or (math.nan, math.nan)
    assert wilson_interval(3, 3) == pytest.approx((1 - high, 1 - low), abs=1e-12)


def test_wilson_interval_of_half_is_centred_on_half() -> None:
    assert _rounded(wilson_interval(5, 10)) == (0.2366, 0.7634)


def test_wilson_interval_without_observations_is_none() -> None:
    assert wilson_interval(0, 0) is None


def test_wilson_interval_holds_the_observed_rate_and_stays_in_unit_range() -> None:
    for total in range(1, 41):
        for passes in range(total + 1):
            interval = wilson_interval(passes, total)
            assert interval is not None
            lower, upper = interval
            assert 0.0 <= lower <= upper <= 1.0, (passes, total)
            assert lower <= passes / total <= upper, (passes, total)


def test_wilson_interval_narrows_as_trials_grow_at_the_same_rate() -> None:
    widths = []
    for total in (4, 8, 16, 32, 64):
        lower, upper = wilson_interval(total // 2, total) or (math.nan, math.nan)
        widths.append(upper - lower)
    assert widths == sorted(widths, reverse=True)
    assert len(set(widths)) == len(widths)


@pytest.mark.parametrize(
    ("fail_to_pass", "pass_to_fail", "expected"),
    [
        (0, 0, 1.0),  # no discordant pair: nothing to test
        (3, 0, 0.25),  # 2 × (1/2)³
        (0, 3, 0.25),
        (1, 1, 1.0),  # the two-sided tail is capped at 1
        (5, 0, 0.0625),  # 2 / 2⁵: five one-way flips are not yet significant at 5%
        (6, 0, 0.03125),  # 2 / 2⁶: six are the fewest that are
        (5, 1, 0.21875),  # 2 × (C(6,0) + C(6,1)) / 2⁶ = 14/64
        (10, 0, 0.001953125),  # 2 / 2¹⁰
        (7, 3, 0.34375),  # 2 × (1 + 10 + 45 + 120) / 2¹⁰ = 352/1024
    ],
)
def test_exact_mcnemar_two_sided_p(fail_to_pass: int, pass_to_fail: int, expected: float) -> None:
    assert mcnemar_exact(fail_to_pass, pass_to_fail) == pytest.approx(expected, abs=1e-15)


def test_exact_mcnemar_is_symmetric_and_a_probability() -> None:
    for a in range(12):
        for b in range(12):
            p = mcnemar_exact(a, b)
            assert p == mcnemar_exact(b, a)
            assert 0.0 < p <= 1.0
            assert (p == 1.0) == (abs(a - b) <= 1), (a, b)


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
