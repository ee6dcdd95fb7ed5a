"""Stopping for futility under `--skill-eval-trials auto`: exact error rates, not just examples.

Futility never rejects, so it cannot raise the false-positive rate: checked exactly. What it
may cost is power (a sequence stopped that would have resolved by the maximum): computed
exactly over a grid of discordance rates and directions, the figures docs/statistics.md shows.
"""

from __future__ import annotations

import itertools

import pytest

from pytest_skill_eval.analysis.sequential import (
    FUTILITY,
    agreeing_stop,
    can_resolve,
    decide,
    futile,
    rejects,
    resolve_chance,
)

ALPHA = 0.05
MAXIMUM = 20
# (discordance, share of discordant pairs that are fail-to-pass): no effect to a sure one.
GRID = [(q, theta) for q in (0.0, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0) for theta in (0.5, 0.8, 0.9, 1.0)]


def _outcomes(
    discordance: float, share: float, maximum: int, *, futility: bool
) -> tuple[float, float]:
    """(P(resolved by the maximum), expected trials run), exactly, by dynamic programming
    over the counts (b, c) of i.i.d. paired trials, with or without stopping for futility."""
    alive = {(0, 0): 1.0}
    resolved = trials = 0.0
    for look in range(1, maximum + 1):
        nxt: dict[tuple[int, int], float] = {}
        for (b, c), p in alive.items():
            steps = (
                (1 - discordance, (b, c)),
                (discordance * share, (b + 1, c)),
                (discordance * (1 - share), (b, c + 1)),
            )
            for chance, (nb, nc) in steps:
                mass = p * chance
                if mass == 0:
                    continue
                if (nb, nc) != (b, c) and rejects(nb, nc, ALPHA):
                    resolved += mass
                    trials += mass * look
                elif futility and look < maximum and futile(nb, nc, look, maximum, ALPHA):
                    trials += mass * look
                else:
                    nxt[(nb, nc)] = nxt.get((nb, nc), 0.0) + mass
        alive = nxt
    return resolved, trials + sum(alive.values()) * maximum


def test_cannot_resolve_is_exactly_no_outcome_of_the_trials_left_reaching_the_boundary() -> None:
    for b, c, remaining in itertools.product(range(8), range(8), range(10)):
        reachable = any(
            rejects(b + x, c + y) for x in range(remaining + 1) for y in range(remaining + 1 - x)
        )
        assert can_resolve(b, c, remaining) == reachable, (b, c, remaining)


def test_the_predictive_chance_matches_enumeration() -> None:
    for b, c, n, remaining in [(0, 0, 3, 7), (4, 0, 2, 5), (3, 1, 1, 6), (5, 0, 0, 3)]:
        expected = _brute_weighted(b, c, n, remaining)
        assert resolve_chance(b, c, n, remaining) == pytest.approx(expected, abs=1e-12)


def _brute_weighted(b: int, c: int, n: int, remaining: int) -> float:
    """Enumeration that stops each path at its first rejection (no double counting)."""

    def walk(x: int, y: int, z: int, left: int) -> float:
        if left == 0:
            return 0.0
        counts = (n + z + 0.5, b + x + 0.5, c + y + 0.5)
        total = sum(counts)
        chance = counts[0] / total * walk(x, y, z + 1, left - 1)
        for outcome, (nx, ny) in ((1, (x + 1, y)), (2, (x, y + 1))):
            share = counts[outcome] / total
            chance += share * (1.0 if rejects(b + nx, c + ny) else walk(nx, ny, z, left - 1))
        return chance

    return walk(0, 0, 0, remaining)


def test_futility_never_raises_the_false_positive_rate() -> None:
    for discordance in (0.05, 0.2, 0.5, 1.0):
        with_futility, _ = _outcomes(discordance, 0.5, MAXIMUM, futility=True)
        without, _ = _outcomes(discordance, 0.5, MAXIMUM, futility=False)
        assert with_futility <= without <= ALPHA


def test_futility_costs_at_most_two_points_of_power_and_saves_the_hopeless_trials() -> None:
    worst = 0.0
    for discordance, share in GRID:
        power, used = _outcomes(discordance, share, MAXIMUM, futility=True)
        before, spent = _outcomes(discordance, share, MAXIMUM, futility=False)
        assert power <= before + 1e-12
        assert used <= spent + 1e-9
        worst = max(worst, before - power)
    assert worst <= 0.02
    # Arms that always agree stopped after 6 of 20 trials; with no effect, after about 9.
    assert _outcomes(0.0, 0.5, MAXIMUM, futility=True)[1] == pytest.approx(6)
    assert agreeing_stop(MAXIMUM) == 6
    assert _outcomes(0.2, 0.5, MAXIMUM, futility=True)[1] < 10
    # A sure effect is never stopped: it resolves after 7 trials as before.
    assert _outcomes(1.0, 1.0, MAXIMUM, futility=True) == pytest.approx((1.0, 7.0))


def test_decide_says_why_an_unresolved_comparison_stops_before_the_maximum() -> None:
    agree = ["pass-to-pass"] * 6
    assert decide(agree[:5], maximum=MAXIMUM).futility is None
    assert decide(agree, maximum=MAXIMUM).futility == "unlikely-to-resolve"
    assert resolve_chance(0, 0, 6, MAXIMUM - 6) < FUTILITY <= resolve_chance(0, 0, 5, 15)
    # Too few trials left for seven pairs one way: it cannot resolve, whatever comes.
    assert decide(["pass-to-pass"], maximum=7).futility == "cannot-resolve"
    assert decide(["fail-to-pass"] * 2, maximum=8).futility is None
    # At the maximum, or without one, nothing stops for futility: the run ended anyway.
    assert decide(agree, maximum=6).futility is None
    assert decide(agree).futility is None
    # A resolved comparison never says futile.
    assert decide(["fail-to-pass"] * 7, maximum=MAXIMUM).futility is None
