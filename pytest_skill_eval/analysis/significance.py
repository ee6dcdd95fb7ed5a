"""The p-values and the multiple-testing step behind `--skill-eval-fail-on significant-regression`.

Each function is a pure function of counts. A comparison regresses when its pass-to-fail pairs
outnumber its fail-to-pass pairs by more than chance would: the one-sided question is asked of
the discordant pairs alone, as McNemar's test asks it. Across every comparison of a suite,
Holm's step-down procedure (Holm 1979, "A simple sequentially rejective multiple test
procedure", Scandinavian Journal of Statistics 6:65-70) holds the family-wise error rate, the
chance that any comparison of identical arms is called a regression, at alpha, whatever the
dependence between the p-values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from .sequential import DISCORDANT, log_e_value


def mcnemar_regression_p(fail_to_pass: int, pass_to_fail: int) -> float:
    """Exact one-sided McNemar p-value for "pass-to-fail beats fail-to-pass".

    P(X ≥ pass_to_fail) for X ~ Binomial(fail_to_pass + pass_to_fail, 1/2): under no difference
    each discordant pair is either direction with probability 1/2. 1 without discordant pairs.
    """
    n = fail_to_pass + pass_to_fail
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(pass_to_fail, n + 1))
    return float(min(1.0, tail / 2**n))


def sequential_regression_p(transitions: Iterable[str | None]) -> float:
    """Always-valid p-value for "pass-to-fail beats fail-to-pass" over a sequence of trials.

    The running minimum of 1/E_n (see `sequential.py`) over the looks at which pass-to-fail
    pairs lead. By Ville's inequality the chance that it ever falls to alpha under no
    difference is at most alpha, at whatever trial the sequence stopped and however many times
    it was looked at; it never rises again once low, so more trials cannot undo a regression.
    """
    b = c = 0
    best = 0.0  # the largest log E_n seen with pass-to-fail ahead
    for transition in transitions:
        step = DISCORDANT.get(transition or "")
        if step is None:
            continue
        b, c = (b + 1, c) if step == 1 else (b, c + 1)
        if c > b:
            best = max(best, log_e_value(b, c))
    return float(min(1.0, math.exp(-best)))


def holm(p_values: Sequence[float], alpha: float) -> tuple[list[float], list[bool]]:
    """Holm's step-down adjusted p-values and which hypotheses are rejected at `alpha`.

    Sorted ascending, the i-th smallest (1-based) of m is adjusted to
    max over j ≤ i of min(1, (m − j + 1) · p_(j)); a hypothesis is rejected when its adjusted
    p-value is at most alpha (equivalently: reject in order while p_(i) ≤ alpha / (m − i + 1)).
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted, [p <= alpha for p in adjusted]


def fisher_regression_p(passes_a: int, total_a: int, passes_b: int, total_b: int) -> float:
    """One-sided Fisher exact p-value for "B's pass rate is below A's" (independent runs).

    P(X ≤ passes_b) for X hypergeometric with the observed margins; 1 when a side is empty or
    every observation passed or failed alike.
    """
    passes, total = passes_a + passes_b, total_a + total_b
    if total_a == 0 or total_b == 0 or passes in (0, total):
        return 1.0
    denominator = math.comb(total, passes)
    low = max(0, passes - total_a)
    tail = sum(
        math.comb(total_b, k) * math.comb(total_a, passes - k) for k in range(low, passes_b + 1)
    )
    return float(min(1.0, tail / denominator))
