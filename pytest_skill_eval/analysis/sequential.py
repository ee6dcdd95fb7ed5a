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

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass

from .stats import ALPHA

# The most trials `--skill-eval-trials auto` runs when --skill-eval-max-trials is not given.
DEFAULT_MAX_TRIALS = 20
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
    # Unresolved before the maximum: why it stops anyway (`futile`); None: it goes on.
    futility: str | None = None


def decide(
    transitions: Iterable[str | None], alpha: float = ALPHA, maximum: int | None = None
) -> Decision:
    """Follow a comparison trial by trial; transitions that are not a pair (None, unavailable)
    count as a look without evidence. Stops at the first trial that rejects; with `maximum`,
    one still unresolved before it says whether it stops for futility."""
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
    why = futile(b, c, looks, maximum, alpha) if maximum is not None and looks < maximum else None
    return Decision(None, e_value(b, c), b, c, looks, why)


# --- Stopping for futility -------------------------------------------------------------------
#
# A comparison that cannot, or almost surely will not, reach the boundary by the maximum number
# of trials stops early. Stopping for futility never rejects, so the set of sequences that end
# "resolved" can only shrink: the false-positive bound above (Ville's inequality) holds as it
# is, proven, not simulated. What futility can cost is power: a sequence it stops might have
# resolved later. That cost is computed exactly (`tests/trials/test_futility.py`) and shown in
# docs/statistics.md.

# Stop when the predictive probability of resolving by the maximum is below this.
FUTILITY = 0.02
# Never stop as unlikely before this many looks: the first trials say least about the rate.
FUTILITY_MIN_LOOKS = 3
# Why an unresolved comparison stopped before the maximum.
FUTILITY_REASONS = ("cannot-resolve", "unlikely-to-resolve")
_PRIOR = 0.5  # Jeffreys' Dirichlet(1/2, 1/2, 1/2) on (concordant, fail-to-pass, pass-to-fail)


def can_resolve(fail_to_pass: int, pass_to_fail: int, remaining: int, alpha: float = ALPHA) -> bool:
    """Whether some outcome of `remaining` more pairs reaches the boundary (all of them going
    one way is the most any can give: the mixture grows with each pair on the larger side)."""
    b, c = fail_to_pass, pass_to_fail
    return any(rejects(b + x, c, alpha) or rejects(b, c + x, alpha) for x in range(remaining + 1))


@functools.lru_cache(maxsize=4096)
def resolve_chance(
    fail_to_pass: int, pass_to_fail: int, concordant: int, remaining: int, alpha: float = ALPHA
) -> float:
    """The predictive probability that the sequence reaches the boundary within `remaining`
    more looks, after `concordant` looks without a discordant pair and b, c with one: each
    look is concordant, fail-to-pass or pass-to-fail as a Pólya urn over the counts so far
    and Jeffreys' prior (the Dirichlet-multinomial predictive). Exact, by dynamic programming."""
    b, c, n = fail_to_pass, pass_to_fail, concordant
    total = b + c + n + 3 * _PRIOR
    alive: dict[tuple[int, int], float] = {(0, 0): 1.0}  # future (b, c) → probability
    reached = 0.0
    for step in range(remaining):
        nxt: dict[tuple[int, int], float] = {}
        for (x, y), p in alive.items():
            weights = (
                (n + step - x - y + _PRIOR, (x, y)),
                (b + x + _PRIOR, (x + 1, y)),
                (c + y + _PRIOR, (x, y + 1)),
            )
            for weight, state in weights:
                q = p * weight / (total + step)
                if state != (x, y) and rejects(b + state[0], c + state[1], alpha):
                    reached += q
                else:
                    nxt[state] = nxt.get(state, 0.0) + q
        alive = nxt
    return reached


def futile(
    fail_to_pass: int, pass_to_fail: int, looks: int, maximum: int, alpha: float = ALPHA
) -> str | None:
    """Why an unresolved comparison stops before the maximum: `cannot-resolve` (no outcome of
    the trials left reaches the boundary) or `unlikely-to-resolve` (the predictive probability
    that they do is below FUTILITY); None: it goes on."""
    remaining = maximum - looks
    if not can_resolve(fail_to_pass, pass_to_fail, remaining, alpha):
        return "cannot-resolve"
    concordant = looks - fail_to_pass - pass_to_fail
    if looks >= FUTILITY_MIN_LOOKS and (
        resolve_chance(fail_to_pass, pass_to_fail, concordant, remaining, alpha) < FUTILITY
    ):
        return "unlikely-to-resolve"
    return None


def agreeing_stop(maximum: int, alpha: float = ALPHA) -> int:
    """The look after which a comparison whose arms agreed in every trial stops for futility
    (`maximum` when it never does): what `plan --estimate` tells before the run."""
    return next((n for n in range(1, maximum) if futile(0, 0, n, maximum, alpha)), maximum)
