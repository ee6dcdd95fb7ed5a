"""The no-harm (non-inferiority) test: its error rate computed exactly, not just examples.

At the boundary of the null hypothesis (the candidate worse by exactly the margin), the chance
that the gate ever says "no harm", looking after every one of up to HORIZON trials (what pooling
re-runs amounts to), is computed exactly by dynamic programming over the counts, for a grid of
margins and discordant shares (the nuisance), and is at most alpha. Deeper inside the null it is
smaller still. Power and `plan --estimate`'s trial counts are checked the same way; the figures
are the ones docs/statistics.md shows.
"""

from __future__ import annotations

import functools
import math

import pytest

from pytest_skill_eval.analysis.noninferiority import (
    log_wealth,
    no_harm_trials,
    regression_trials,
    shows_no_harm,
    verdict,
)

ALPHA = 0.05
HORIZON = 120
MARGINS = (0.05, 0.1, 0.2, 0.3)


@functools.cache
def _bounds(margin: float, horizon: int) -> tuple[tuple[int, ...], ...]:
    """Per n ≤ horizon and b ≤ n: the most pass-to-fail pairs that still show no harm (−1)."""
    out = []
    for n in range(horizon + 1):
        row = []
        for b in range(n + 1):
            c = -1
            while c + 1 <= n - b and shows_no_harm(b, c + 1, n, margin, ALPHA):
                c += 1
            row.append(c)
        out.append(tuple(row))
    return tuple(out)


def ever_shown(margin: float, fail_to_pass: float, pass_to_fail: float, horizon: int) -> float:
    """P(no harm is shown at some look 1 … horizon), exactly, for i.i.d. paired trials."""
    bounds = _bounds(margin, horizon)
    concordant = 1 - fail_to_pass - pass_to_fail
    alive = {(0, 0): 1.0}
    shown = 0.0
    for n in range(1, horizon + 1):
        nxt: dict[tuple[int, int], float] = {}
        for (b, c), p in alive.items():
            for state, q in (
                ((b, c), concordant),
                ((b + 1, c), fail_to_pass),
                ((b, c + 1), pass_to_fail),
            ):
                if q <= 0:
                    continue
                if state[1] <= bounds[n][state[0]]:
                    shown += p * q
                else:
                    nxt[state] = nxt.get(state, 0.0) + p * q
        alive = nxt
    return shown


def _boundary(margin: float, discordance: float) -> tuple[float, float]:
    """(q_b, q_c) with q_b + q_c = discordance and q_c − q_b = margin: worse by the margin."""
    return (discordance - margin) / 2, (discordance + margin) / 2


@pytest.mark.parametrize("margin", MARGINS)
def test_the_error_rate_at_the_boundary_is_at_most_alpha_over_every_look(margin: float) -> None:
    rates = []
    for discordance in (margin, 0.2, 0.4, 0.6, 0.8, 1.0):
        if discordance < margin:
            continue
        rate = ever_shown(margin, *_boundary(margin, discordance), HORIZON)
        assert rate <= ALPHA, (margin, discordance, rate)
        rates.append(rate)
    assert max(rates) > 0  # the test is not empty: it can say no harm under the null


def test_deeper_in_the_null_the_error_rate_falls() -> None:
    margin = 0.1
    at = ever_shown(margin, *_boundary(margin, 0.4), HORIZON)
    worse = ever_shown(margin, *_boundary(0.2, 0.4), HORIZON)
    assert worse < at <= ALPHA


def test_the_trials_plan_estimate_prints_reach_the_power() -> None:
    # No true difference, 30% of pairs discordant, margin 0.2: the count printed gives at
    # least 80% power at that trial, so looking at every trial gives at least as much.
    needed = no_harm_trials(0.2, ALPHA, 0.8, 0.3)
    assert needed is not None
    assert ever_shown(0.2, 0.15, 0.15, needed) >= 0.8
    assert no_harm_trials(0.2, ALPHA, 0.8, 0.3) == needed  # deterministic
    assert (no_harm_trials(0.1, ALPHA, 0.8, 0.3), needed, no_harm_trials(0.3, ALPHA, 0.8, 0.3)) == (
        458,
        107,
        48,
    )  # docs/statistics.md shows these
    assert (no_harm_trials(0.2, ALPHA, 0.9, 0.3) or 0) > needed


def test_the_regression_gate_trials_grow_as_the_effect_shrinks() -> None:
    big, small = regression_trials(0.3, ALPHA, 0.8, 0.3), regression_trials(0.1, ALPHA, 0.8, 0.3)
    assert big is not None
    assert small is not None
    assert small > big


def test_agreeing_pairs_show_no_harm_only_after_enough_of_them() -> None:
    # Fifteen concordant pairs show no harm at margin 0.3; twelve do not; three pass-to-fail
    # pairs among fifteen do not either.
    assert verdict(["pass-to-pass"] * 15, 0.3, ALPHA).shown
    assert not verdict(["pass-to-pass"] * 12, 0.3, ALPHA).shown
    worse = verdict(["pass-to-pass"] * 12 + ["pass-to-fail"] * 3, 0.3, ALPHA)
    assert (worse.pass_to_fail, worse.pairs, worse.shown) == (3, 15, False)
    # Unavailable trials are no pair; the p-value is one over the largest wealth seen.
    same = verdict(["pass-to-pass"] * 15 + ["unavailable", None], 0.3, ALPHA)
    assert same.pairs == 15
    assert same.p == pytest.approx(1 / _wealth(0, 0, 15, 0.3))


def _wealth(b: int, c: int, n: int, margin: float) -> float:
    return math.exp(log_wealth(b, c, n, margin))


def test_counts_outside_the_model_are_refused() -> None:
    with pytest.raises(ValueError, match="counts must satisfy"):
        log_wealth(2, 2, 3, 0.1)
    with pytest.raises(ValueError, match="margin must lie"):
        log_wealth(0, 0, 3, 1.0)
