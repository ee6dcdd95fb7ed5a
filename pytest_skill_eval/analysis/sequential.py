"""The sequential test behind `--skill-eval-trials auto`: an always-valid paired comparison.

After each completed trial, a comparison has a sequence of baseline→candidate transitions.
Concordant pairs (pass-to-pass, fail-to-fail) say nothing about a difference; each discordant
pair is fail-to-pass (b) or pass-to-fail (c). Under the null hypothesis of no difference
(marginal homogeneity, the hypothesis of McNemar's test) every discordant pair is, given the
past, fail-to-pass with probability 1/2. The evidence against it is the mixture likelihood
ratio with Jeffreys' Beta(1/2, 1/2) prior on that probability (the Krichevsky–Trofimov mixture):

    E_n = B(b + 1/2, c + 1/2) / B(1/2, 1/2) / (1/2)^(b + c)

E_n is a nonnegative martingale with E_0 = 1 under the null, so by Ville's inequality
P(E_n ≥ 1/α for some n) ≤ α: stopping the first time E_n ≥ 1/α, after any number of looks
and whatever the maximum, rejects a true null with probability at most α (Robbins 1970,
"Statistical methods related to the law of the iterated logarithm"; Ramdas et al. 2023,
"Game-theoretic statistics and safe anytime-valid inference", Statistical Science 38:576-601).
It is two-sided: the prior is symmetric around 1/2. All functions are pure functions of counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from .stats import ALPHA

METHOD = "mixture-sequential-mcnemar"
METHOD_TEXT = (
    "always-valid two-sided test on the discordant pairs: Beta(1/2, 1/2) mixture likelihood "
    "ratio against p = 1/2, stopped when it reaches 1/alpha (Ville's inequality)"
)
DISCORDANT = {"fail-to-pass": 1, "pass-to-fail": -1}
_LOG_HALF_BETA = math.log(math.pi)  # log B(1/2, 1/2)


def log_e_value(fail_to_pass: int, pass_to_fail: int) -> float:
    """log E_n for b fail-to-pass and c pass-to-fail pairs (0 with no discordant pair)."""
    b, c = fail_to_pass, pass_to_fail
    if b < 0 or c < 0:
        raise ValueError(f"counts must be non-negative (b={b}, c={c})")
    log_beta = math.lgamma(b + 0.5) + math.lgamma(c + 0.5) - math.lgamma(b + c + 1)
    return log_beta - _LOG_HALF_BETA + (b + c) * math.log(2)


def e_value(fail_to_pass: int, pass_to_fail: int) -> float:
    """E_n: how many times more likely the counts are under some difference than under none."""
    return math.exp(log_e_value(fail_to_pass, pass_to_fail))


def rejects(fail_to_pass: int, pass_to_fail: int, alpha: float = ALPHA) -> bool:
    """Whether the counts reach the boundary E_n ≥ 1/α."""
    # A hair of tolerance so that a value exactly at the boundary is not lost to rounding.
    return log_e_value(fail_to_pass, pass_to_fail) >= -math.log(alpha) - 1e-12


def boundary(discordant: int, alpha: float = ALPHA) -> int | None:
    """The fewest pairs in the majority direction, of `discordant`, that reject; None: none do."""
    for majority in range((discordant + 1) // 2, discordant + 1):
        if rejects(majority, discordant - majority, alpha):
            return majority
    return None


@dataclass(frozen=True, slots=True)
class Decision:
    """Where a comparison's sequence stands: resolved at which trial, and its evidence now."""

    resolved_at: int | None  # the 1-based trial after which E_n first reached 1/α
    e_value: float  # E_n at the trial it was resolved, else after the last trial
    fail_to_pass: int
    pass_to_fail: int
    looks: int  # trials seen


def decide(transitions: Iterable[str | None], alpha: float = ALPHA) -> Decision:
    """Follow a comparison trial by trial; transitions that are not a pair (None, unavailable)
    count as a look without evidence. Stops at the first trial that rejects."""
    b = c = looks = 0
    for transition in transitions:
        looks += 1
        step = DISCORDANT.get(transition or "")
        if step == 1:
            b += 1
        elif step == -1:
            c += 1
        if step is not None and rejects(b, c, alpha):
            return Decision(looks, e_value(b, c), b, c, looks)
    return Decision(None, e_value(b, c), b, c, looks)
