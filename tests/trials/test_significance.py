"""The statistical gate's pieces: the one-sided p-values, Holm's step-down, and its error rate.

The simulations use no host: they draw discordant pairs for comparisons whose two arms are
identical (each discordant pair is either direction with probability 1/2) and feed them to the
same functions the gate uses.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from pytest_skill_eval.analysis.sequential import rejects
from pytest_skill_eval.analysis.significance import (
    fisher_regression_p,
    holm,
    mcnemar_regression_p,
    sequential_regression_p,
)
from pytest_skill_eval.analysis.stats import fisher_exact, mcnemar_exact

ALPHA = 0.05
SUITES = 10_000
COMPARISONS = 4  # comparisons per simulated suite
# Three binomial standard deviations of a rate of ALPHA over SUITES suites (0.0065): a
# procedure that held alpha exactly would exceed ALPHA + MARGIN about once in 700 seeds.
MARGIN = 3 * math.sqrt(ALPHA * (1 - ALPHA) / SUITES)


# -- Holm -------------------------------------------------------------------------------------


def test_holm_rejects_the_textbook_example() -> None:
    # Holm's example as the Holm–Bonferroni literature states it: p1..p4 = 0.01, 0.04, 0.03,
    # 0.005 at alpha 0.05: 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2 stops: H4, H1 rejected.
    adjusted, rejected = holm([0.01, 0.04, 0.03, 0.005], ALPHA)
    assert rejected == [True, False, False, True]
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_adjusted_p_values_are_monotone_capped_and_equal_bonferroni_for_one() -> None:
    assert holm([0.2], ALPHA) == ([0.2], [False])
    assert holm([0.04], ALPHA) == ([0.04], [True])
    # The step-down stops at the first non-rejection even when a later raw p is small enough
    # for its own threshold: 0.03 * 2 = 0.06 > 0.05, then 0.04 * 1 is lifted to 0.06.
    adjusted, rejected = holm([0.03, 0.04], ALPHA)
    assert adjusted == pytest.approx([0.06, 0.06])
    assert rejected == [False, False]
    assert holm([0.9, 0.8, 0.7], ALPHA)[0] == [1.0, 1.0, 1.0]
    assert holm([], ALPHA) == ([], [])


# -- the p-values -----------------------------------------------------------------------------


def test_the_one_sided_mcnemar_p_is_the_upper_binomial_tail() -> None:
    assert mcnemar_regression_p(0, 5) == pytest.approx(1 / 32)
    assert mcnemar_regression_p(1, 5) == pytest.approx(7 / 64)
    assert mcnemar_regression_p(5, 0) == 1.0  # improvements are no evidence of a regression
    assert mcnemar_regression_p(0, 0) == 1.0
    assert mcnemar_regression_p(3, 3) == pytest.approx(42 / 64)
    # Where pass-to-fail leads, the one-sided p is half the two-sided one.
    for b, c in [(0, 4), (1, 6), (2, 9), (4, 7)]:
        assert 2 * mcnemar_regression_p(b, c) == pytest.approx(mcnemar_exact(b, c))


def test_the_sequential_p_is_the_running_minimum_of_one_over_the_e_value() -> None:
    # c pass-to-fail pairs in a row: E = C(2c, c) / 2^c, so p = 2^c / C(2c, c).
    for c in range(1, 12):
        expected = min(1.0, 2**c / math.comb(2 * c, c))
        assert sequential_regression_p(["pass-to-fail"] * c) == pytest.approx(expected)
    assert sequential_regression_p(["pass-to-fail"] * 7) < ALPHA < 2**6 / math.comb(12, 6)
    # Concordant trials and trials without a pair are no evidence either way.
    padded = ["pass-to-pass", None, "pass-to-fail", "fail-to-fail"] * 7
    assert sequential_regression_p(padded) == sequential_regression_p(["pass-to-fail"] * 7)
    # Once low it stays low: later improvements do not undo a regression already seen.
    late = ["pass-to-fail"] * 8 + ["fail-to-pass"] * 8
    assert sequential_regression_p(late) == sequential_regression_p(["pass-to-fail"] * 8)
    assert sequential_regression_p(["fail-to-pass"] * 10) == 1.0
    assert sequential_regression_p([]) == 1.0


def test_the_one_sided_fisher_p_is_the_lower_hypergeometric_tail() -> None:
    assert fisher_regression_p(5, 5, 0, 5) == pytest.approx(1 / 252)
    assert 2 * fisher_regression_p(5, 5, 0, 5) == pytest.approx(fisher_exact(5, 5, 0, 5))
    assert fisher_regression_p(0, 5, 5, 5) == 1.0
    # 4/5 then 1/5: P(X <= 1) with 5 passes among 10, 5 drawn for B = (5*5 + 1) / 252.
    assert fisher_regression_p(4, 5, 1, 5) == pytest.approx(26 / 252)
    assert fisher_regression_p(0, 0, 1, 3) == 1.0


# -- the false-failure rate over simulated suites of identical arms --------------------------


def _pair(rng: random.Random, discordance: float) -> str:
    """One trial of a comparison whose arms are identical: discordant with `discordance`,
    and then either direction with probability 1/2."""
    if rng.random() >= discordance:
        return rng.choice(("pass-to-pass", "fail-to-fail"))
    return "pass-to-fail" if rng.random() < 0.5 else "fail-to-pass"


def _adaptive(rng: random.Random, discordances: list[float], maximum: int) -> list[list[str]]:
    """One adaptive run of a group: trials until the two-sided sequential test resolves every
    comparison or `maximum` trials ran, as `--skill-eval-trials auto` decides."""
    sequences: list[list[str]] = [[] for _ in discordances]
    counts = [[0, 0] for _ in discordances]  # fail-to-pass, pass-to-fail
    resolved = [False for _ in discordances]
    for _ in range(maximum):
        for index, discordance in enumerate(discordances):
            transition = _pair(rng, discordance)
            sequences[index].append(transition)
            if transition in ("fail-to-pass", "pass-to-fail"):
                counts[index][transition == "pass-to-fail"] += 1
                resolved[index] = resolved[index] or rejects(*counts[index])
        if all(resolved):
            break
    return sequences


def _fails(p_values: list[float]) -> bool:
    return any(holm(p_values, ALPHA)[1])


def _rate(seed: int, suite: Callable[[random.Random], bool], suites: int = SUITES) -> float:
    rng = random.Random(seed)
    return sum(suite(rng) for _ in range(suites)) / suites


def test_fixed_trials_of_identical_arms_fail_the_gate_at_most_alpha_of_the_time() -> None:
    """False failure (fixed trials): the share of simulated suites of identical arms — each
    of COMPARISONS comparisons with its own discordance rate, 10 trials — in which the gate
    (the always-valid p-value per comparison, as for every run, Holm across the suite) rejects
    any comparison. It must stay at or below alpha, up to MARGIN for the finite number of
    suites. The one-look exact McNemar p-value, which the gate does not use, holds it too."""

    def suite(rng: random.Random, exact: bool) -> bool:
        p_values = []
        for _ in range(COMPARISONS):
            discordance = rng.uniform(0.05, 0.9)
            sequence = [_pair(rng, discordance) for _ in range(10)]
            b, c = sequence.count("fail-to-pass"), sequence.count("pass-to-fail")
            p_values.append(
                mcnemar_regression_p(b, c) if exact else sequential_regression_p(sequence)
            )
        return _fails(p_values)

    assert _rate(20260, lambda rng: suite(rng, exact=False)) <= ALPHA + MARGIN
    assert _rate(20264, lambda rng: suite(rng, exact=True)) <= ALPHA + MARGIN


def test_adaptive_trials_of_identical_arms_fail_the_gate_at_most_alpha_of_the_time() -> None:
    """False failure (adaptive trials): as above, but each suite runs as `--skill-eval-trials
    auto` does (trials until every comparison is resolved, at most 20) and the gate uses the
    always-valid sequential p-value: stopping on the data must not raise the rate above alpha."""

    def suite(rng: random.Random) -> bool:
        discordances = [rng.uniform(0.05, 0.9) for _ in range(COMPARISONS)]
        sequences = _adaptive(rng, discordances, 20)
        return _fails([sequential_regression_p(s) for s in sequences])

    assert _rate(20261, suite) <= ALPHA + MARGIN


def test_re_running_until_green_neither_manufactures_a_pass_nor_a_failure() -> None:
    """Re-running until it passes. A user re-runs an adaptive suite up to three times and stops
    at the first run the gate passes; each re-run's gate looks at the trials of every run so
    far, pooled into one sequence per comparison (the always-valid test allows any number of
    looks). Two rates are defined over the simulated suites:

    - the false-failure rate: the share of suites of identical arms in which ANY of the looks
      fails the gate. Each extra look is another chance to fail, yet it stays at or below alpha
      (Ville's inequality over the pooled sequence, Holm across comparisons);
    - undone failures: suites (identical arms or a true regression) in which a look failed the
      gate and a later look passed it. There are none: the pooled p-values only fall, and Holm
      rejects more when p-values fall, so re-running cannot turn a failed gate green.
    """
    reruns = 3
    undone = 0

    def suite(rng: random.Random, regression: float) -> bool:
        nonlocal undone
        discordances = [rng.uniform(0.05, 0.9) for _ in range(COMPARISONS)]
        pooled: list[list[str]] = [[] for _ in discordances]
        verdicts = []
        for _ in range(reruns):
            for sequence, more in zip(pooled, _adaptive(rng, discordances, 8), strict=True):
                # A true regression turns some of the improvements into pass-to-fail pairs.
                sequence.extend(
                    "pass-to-fail" if t == "fail-to-pass" and rng.random() < regression else t
                    for t in more
                )
            verdicts.append(_fails([sequential_regression_p(s) for s in pooled]))
        first = verdicts.index(True) if True in verdicts else reruns
        undone += not all(verdicts[first:])
        return any(verdicts)

    assert _rate(20262, lambda rng: suite(rng, 0.0)) <= ALPHA + MARGIN
    regressed = _rate(20263, lambda rng: suite(rng, 0.6), 2_000)
    assert regressed > ALPHA + MARGIN  # the regression is seen, so "never undone" has content
    assert undone == 0
