"""The statistics behind `--skill-eval-fail-on no-harm`: an always-valid non-inferiority test.

Each trial of a comparison pairs the baseline's outcome with the candidate's. Score it
X = +1 for fail-to-pass, −1 for pass-to-fail and 0 for a concordant pair; its mean is
p_candidate − p_baseline. With a declared margin δ the hypotheses are

    H0: p_candidate − p_baseline ≤ −δ  (the candidate is worse by δ or more)
    H1: p_candidate − p_baseline > −δ  (it is not: no harm beyond the margin)

and "no harm" is said only when H0 is rejected. Under H0, Y = X + δ has conditional mean ≤ 0
given the past, whatever the share of concordant pairs (the nuisance) and however it drifts, so
for every λ in [0, 1/(1 − δ)] the wealth Π(1 + λ·Y_i) is a nonnegative supermartingale
starting at 1 (a bet against H0: Waudby-Smith & Ramdas 2024, "Estimating means of bounded
random variables by betting", JRSS B 86:1-27). An average of such bets over a fixed grid of λ
is one too, and Ville's inequality bounds the chance that it ever reaches 1/α under H0 by α:
however many trials, looks and re-runs are pooled into the sequence. The product depends on the
counts alone (b fail-to-pass, c pass-to-fail, n pairs), so the verdict is a pure function of
counts; the gate takes the largest wealth seen along the pooled sequence, in the order it ran.

Across the comparisons of a suite the suite does no harm only when every comparison shows no
harm: an intersection-union test, whose error rate is at most α with no adjustment (Berger
1982, "Multiparameter hypothesis testing and acceptance sampling", Technometrics 24:295-300).

`trials_needed` is what `plan --estimate` prints: the smallest number of paired trials whose
exact trinomial probability of reaching the boundary at that trial is at least the power asked.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .sequential import DISCORDANT, log_e_value

GRID = 20  # bets λ_j = j / (GRID + 1) / (1 − δ), j = 1 … GRID, averaged with equal weight
MOST_TRIALS = 5000  # `trials_needed` answers None beyond this


def _bets(margin: float) -> list[float]:
    return [j / (GRID + 1) / (1 - margin) for j in range(1, GRID + 1)]


def log_wealth(fail_to_pass: int, pass_to_fail: int, pairs: int, margin: float) -> float:
    """log of the averaged wealth after `pairs` pairs, b and c of them discordant."""
    b, c = fail_to_pass, pass_to_fail
    if b < 0 or c < 0 or b + c > pairs:
        raise ValueError(f"counts must satisfy 0 <= b + c <= n (b={b}, c={c}, n={pairs})")
    if not 0 < margin < 1:
        raise ValueError(f"the margin must lie strictly between 0 and 1 (margin={margin})")
    logs = [
        b * math.log1p(lam * (1 + margin))
        + c * math.log1p(-lam * (1 - margin))
        + (pairs - b - c) * math.log1p(lam * margin)
        for lam in _bets(margin)
    ]
    top = max(logs)
    return top + math.log(sum(math.exp(x - top) for x in logs) / GRID)


def shows_no_harm(
    fail_to_pass: int, pass_to_fail: int, pairs: int, margin: float, alpha: float
) -> bool:
    """Whether the wealth of these counts reaches 1/α."""
    return log_wealth(fail_to_pass, pass_to_fail, pairs, margin) >= -math.log(alpha) - 1e-12


@dataclass(frozen=True, slots=True)
class Verdict:
    """One comparison's no-harm test over its pooled sequence of trials."""

    fail_to_pass: int
    pass_to_fail: int
    pairs: int
    p: float  # always-valid p-value: 1 / the largest wealth seen, at most 1
    shown: bool  # p ≤ α: no harm beyond the margin


def verdict(transitions: Iterable[str | None], margin: float, alpha: float) -> Verdict:
    """Follow the sequence in order: every graded pair is a look; unavailable trials are none."""
    b = c = n = 0
    best = 0.0
    for transition in transitions:
        if transition is None or transition == "unavailable":
            continue
        n += 1
        step = DISCORDANT.get(transition)
        b, c = (b + (step == 1), c + (step == -1))
        best = max(best, log_wealth(b, c, n, margin))
    p = float(min(1.0, math.exp(-best)))
    return Verdict(b, c, n, p, p <= alpha)


# --- How many trials: exact power at a fixed number of pairs --------------------------------


# The counts that reach the boundary at n pairs, per b: c ≤ bound(b, n) (no harm: the wealth
# falls with each pass-to-fail pair) or c ≥ bound(b, n) (a regression: its e-value grows with
# the lead of pass-to-fail pairs). Either way the bound never falls as b grows.
Bound = Callable[[int, int], int]


def _pmfs(n: int, p: float) -> list[float]:
    """Binomial(n, p) probabilities of 0 … n, by the ratio of consecutive terms."""
    if p <= 0 or p >= 1:
        return [float(k == (n if p >= 1 else 0)) for k in range(n + 1)]
    out = [math.exp(n * math.log1p(-p))]
    ratio = p / (1 - p)
    for k in range(n):
        out.append(out[-1] * (n - k) / (k + 1) * ratio)
    if out[0] == 0.0:  # underflow at large n: the same terms from their logarithms
        out = [
            math.exp(
                math.lgamma(n + 1)
                - math.lgamma(k + 1)
                - math.lgamma(n - k + 1)
                + k * math.log(p)
                + (n - k) * math.log1p(-p)
            )
            for k in range(n + 1)
        ]
    return out


def power(bound: Bound, below: bool, pairs: int, fail_to_pass: float, pass_to_fail: float) -> float:
    """The exact probability of reaching the boundary at n = `pairs` (c ≤ bound(b, n) when
    `below`, else c ≥ bound(b, n)) when each pair is fail-to-pass with probability
    `fail_to_pass` and pass-to-fail with `pass_to_fail`, independently: a sum over the
    trinomial, b ~ Bin(n, q_b) and c | b ~ Bin(n − b, q_c / (1 − q_b))."""
    q_b, q_c, n = fail_to_pass, pass_to_fail, pairs
    conditional = q_c / (1 - q_b) if q_b < 1 else 0.0
    total = 0.0
    for b, weight in enumerate(_pmfs(n, q_b)):
        if weight < 1e-13:
            continue
        edge = bound(b, n)
        cs = _pmfs(n - b, conditional)
        total += weight * sum(cs[: max(0, edge + 1)] if below else cs[max(0, edge) :])
    return min(1.0, total)


def trials_needed(
    bound: Bound, below: bool, fail_to_pass: float, pass_to_fail: float, target: float
) -> int | None:
    """The smallest number of pairs (found by doubling, then bisection) whose power is at least
    `target`; None when not even MOST_TRIALS pairs reach it."""

    def enough(n: int) -> bool:
        return power(bound, below, n, fail_to_pass, pass_to_fail) >= target

    high = 4
    while not enough(high):
        if high >= MOST_TRIALS:
            return None
        high = min(MOST_TRIALS, high * 2)
    low = high // 2  # not enough (or the first doubling)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


@functools.lru_cache(maxsize=256)
def no_harm_trials(
    margin: float, alpha: float, target: float, discordance: float, difference: float = 0.0
) -> int | None:
    """Paired trials for no harm to be shown with probability `target` when the candidate's
    pass rate truly differs from the baseline's by `difference` (0: no harm at all) and a share
    `discordance` of the pairs disagree."""
    q_b, q_c = _rates(discordance, difference)

    def bound(b: int, n: int) -> int:  # the most pass-to-fail pairs that still show no harm
        return _last(lambda c: shows_no_harm(b, c, n, margin, alpha), n - b)

    return trials_needed(bound, True, q_b, q_c, target)


@functools.lru_cache(maxsize=256)
def regression_trials(effect: float, alpha: float, target: float, discordance: float) -> int | None:
    """Paired trials for `--skill-eval-fail-on significant-regression` to catch a candidate
    worse by `effect` with probability `target` (its always-valid test, `sequential.py`)."""
    q_b, q_c = _rates(discordance, -effect)
    line = -math.log(alpha) - 1e-12

    def bound(b: int, n: int) -> int:  # the fewest pass-to-fail pairs that show a regression
        most = n - b
        return most - _last(lambda x: log_e_value(b, most - x) >= line and most - x > b, most)

    return trials_needed(bound, False, q_b, q_c, target)


def _last(holds: Callable[[int], bool], most: int) -> int:
    """The largest x in 0 … `most` for which `holds` (true up to some x, false after), by
    bisection; −1 when it holds for none."""
    if not holds(0):
        return -1
    low, high = 0, most + 1  # holds(low); not holds(high) (most + 1 stands for "past the end")
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if holds(middle) else (low, middle)
    return low


def _rates(discordance: float, difference: float) -> tuple[float, float]:
    """(q_b, q_c): fail-to-pass and pass-to-fail probabilities with q_b + q_c = discordance and
    q_b − q_c = difference; a difference the discordance cannot hold is the user's to fix."""
    if abs(difference) > discordance:
        raise ValueError(
            f"a difference of {difference:g} needs a discordant share of at least "
            f"{abs(difference):g} (given {discordance:g})"
        )
    return (discordance + difference) / 2, (discordance - difference) / 2
