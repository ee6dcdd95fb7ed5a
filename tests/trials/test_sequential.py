"""The sequential test of `--skill-eval-trials auto`: textbook values and its error rate."""

from __future__ import annotations

import math
import random

import pytest

from pytest_skill_eval.analysis.sequential import boundary, decide, e_value, rejects

ALPHA = 0.05


def test_e_value_has_the_closed_form_of_the_jeffreys_mixture() -> None:
    # With b discordant pairs all one way, E_b = C(2b, b) / 2^b.
    for b in range(0, 12):
        assert e_value(b, 0) == pytest.approx(math.comb(2 * b, b) / 2**b)
        assert e_value(0, b) == pytest.approx(e_value(b, 0))  # two-sided: symmetric
    # B(3/2, 3/2) / B(1/2, 1/2) * 4 = (pi/8) / pi * 4 = 1/2 for one pair each way.
    assert e_value(1, 1) == pytest.approx(0.5)
    # Balanced counts are evidence *for* no difference.
    assert e_value(5, 5) < 1


def test_the_boundary_is_the_first_count_at_one_over_alpha() -> None:
    assert e_value(6, 0) < 1 / ALPHA <= e_value(7, 0)
    assert [boundary(n) for n in range(1, 12)] == [None] * 6 + [7, 8, 9, 10, 11]
    assert not rejects(6, 0)
    assert rejects(7, 0)
    assert rejects(0, 7)
    for n in range(7, 60):
        k = boundary(n)
        assert k is not None
        assert rejects(k, n - k)
        assert not rejects(k - 1, n - k + 1)


def test_decide_stops_at_the_first_rejecting_trial_and_skips_non_pairs() -> None:
    always = ["fail-to-pass"] * 9
    assert decide(always).resolved_at == 7
    with_gaps = ["fail-to-pass", "unavailable", "pass-to-pass", None] + ["fail-to-pass"] * 6
    decision = decide(with_gaps)
    assert decision.resolved_at == 10
    assert decision.fail_to_pass == 7
    assert decision.pass_to_fail == 0
    same = ["pass-to-pass", "fail-to-fail"] * 10
    decision = decide(same)
    assert decision.resolved_at is None
    assert decision.e_value == pytest.approx(1.0)
    assert decision.looks == 20


def _exact_false_positive_rate(discordance: float, trials: int) -> float:
    """P(reject within `trials`) under no difference, by dynamic programming over (b, c)."""
    limits = [boundary(n) for n in range(trials + 1)]
    alive = {(0, 0): 1.0}
    rejected = 0.0
    for _ in range(trials):
        step: dict[tuple[int, int], float] = {}
        for (b, c), p in alive.items():
            step[(b, c)] = step.get((b, c), 0.0) + p * (1 - discordance)
            for nb, nc in ((b + 1, c), (b, c + 1)):
                q = p * discordance / 2
                limit = limits[nb + nc]
                if limit is not None and max(nb, nc) >= limit:
                    rejected += q
                else:
                    step[(nb, nc)] = step.get((nb, nc), 0.0) + q
        alive = step
    return rejected


@pytest.mark.parametrize("discordance", [0.05, 0.2, 0.5, 1.0])
def test_the_exact_false_positive_rate_stays_below_alpha(discordance: float) -> None:
    rate = _exact_false_positive_rate(discordance, 100)
    assert 0 < rate <= ALPHA


def test_simulated_false_positive_rate_is_within_alpha_over_a_grid_of_discordance() -> None:
    """≥ 10,000 sequences per discordance rate under no true difference, 40 looks each."""
    sequences, looks = 10_000, 40
    # A one-sided 3-sigma Monte-Carlo allowance over the stated level.
    allowance = 3 * math.sqrt(ALPHA * (1 - ALPHA) / sequences)
    limits = [boundary(n) for n in range(looks + 1)]
    rng = random.Random(20261201)
    for discordance in (0.02, 0.1, 0.25, 0.5, 0.75, 1.0):
        false_positives = 0
        for _ in range(sequences):
            b = c = 0
            for _ in range(looks):
                draw = rng.random()
                if draw >= discordance:
                    continue  # a concordant pair
                if draw < discordance / 2:
                    b += 1
                else:
                    c += 1
                limit = limits[b + c]
                if limit is not None and max(b, c) >= limit:
                    false_positives += 1
                    break
        rate = false_positives / sequences
        assert rate <= ALPHA + allowance, (discordance, rate)


def test_a_true_difference_is_found() -> None:
    """Power, as a sanity check: a 90/10 split of discordant pairs is resolved in 40 looks."""
    rng = random.Random(7)
    found = sum(
        decide(
            "fail-to-pass" if rng.random() < 0.9 else "pass-to-fail" for _ in range(40)
        ).resolved_at
        is not None
        for _ in range(500)
    )
    assert found / 500 > 0.95
