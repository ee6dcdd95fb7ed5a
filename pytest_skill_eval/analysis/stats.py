"""The statistics behind the aggregate and `skill-eval compare`: pure functions of counts.

Every function here is a fact about counts (an interval, a p-value, an estimator, a sample
size); none of them says whether a skill is good. Sources are cited where each is defined.
"""

from __future__ import annotations

import math
from statistics import NormalDist

Z95 = 1.959963984540054
ALPHA = 0.05
POWER = 0.80


def normal_quantile(p: float) -> float:
    """The standard normal quantile Φ⁻¹(p)."""
    return NormalDist().inv_cdf(p)


def wilson_interval(passes: int, total: int, z: float = Z95) -> tuple[float, float] | None:
    """95% Wilson score interval of a pass rate; None without observations."""
    if total == 0:
        return None
    p = passes / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    # At 0/n and n/n the bound is exactly the observed rate; rounding would leave it just off.
    lower = 0.0 if passes == 0 else max(0.0, centre - half)
    upper = 1.0 if passes == total else min(1.0, centre + half)
    return lower, upper


def mcnemar_exact(fail_to_pass: int, pass_to_fail: int) -> float:
    """Exact two-sided McNemar p-value: a binomial(n, 1/2) test on the discordant pairs."""
    n = fail_to_pass + pass_to_fail
    if n == 0:
        return 1.0
    k = min(fail_to_pass, pass_to_fail)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return float(min(1.0, 2 * tail))


def newcombe_difference(
    passes_a: int, total_a: int, passes_b: int, total_b: int, z: float = Z95
) -> tuple[float, float, float] | None:
    """The difference of two independent proportions b − a with its 95% interval.

    Newcombe's hybrid score interval (Newcombe 1998, "Interval estimation for the difference
    between independent proportions: comparison of eleven methods", Statistics in Medicine
    17:873-890, method 10): with Wilson intervals (l, u) of each rate and d = p_b − p_a,
    lower = d − sqrt((p_b − l_b)² + (u_a − p_a)²), upper = d + sqrt((u_b − p_b)² + (p_a − l_a)²).
    Returns (d, lower, upper), or None when either side has no observations.
    """
    wa, wb = wilson_interval(passes_a, total_a, z), wilson_interval(passes_b, total_b, z)
    if wa is None or wb is None:
        return None
    pa, pb = passes_a / total_a, passes_b / total_b
    d = pb - pa
    lower = d - math.sqrt((pb - wb[0]) ** 2 + (wa[1] - pa) ** 2)
    upper = d + math.sqrt((wb[1] - pb) ** 2 + (pa - wa[0]) ** 2)
    return d, max(-1.0, lower), min(1.0, upper)


def fisher_exact(passes_a: int, total_a: int, passes_b: int, total_b: int) -> float:
    """Two-sided Fisher exact p-value for two independent proportions (2×2 table).

    Sums the hypergeometric probabilities of every table with the same margins that is no
    more likely than the observed one (the usual two-sided definition), with a relative
    tolerance so that ties are not lost to rounding.
    """
    passes = passes_a + passes_b
    total = total_a + total_b
    if total_a == 0 or total_b == 0 or passes in (0, total):
        return 1.0
    denominator = math.comb(total, passes)

    def probability(k: int) -> float:
        return math.comb(total_a, k) * math.comb(total_b, passes - k) / denominator

    observed = probability(passes_a)
    low, high = max(0, passes - total_b), min(total_a, passes)
    p = sum(probability(k) for k in range(low, high + 1) if probability(k) <= observed * (1 + 1e-7))
    return float(min(1.0, p))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials drawn from the n run passes: 1 − C(n−c,k)/C(n,k).

    The unbiased estimator of Chen et al. 2021 ("Evaluating Large Language Models Trained on
    Code", eq. 1), over n observed trials of which c passed; requires 1 ≤ k ≤ n.
    """
    _check_k(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all of k trials drawn from the n run pass: C(c,k)/C(n,k).

    The pass^k estimator of Yao et al. 2024 ("τ-bench"), over n observed trials with c passes;
    requires 1 ≤ k ≤ n. pass^n is 1 only when every trial passed.
    """
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_k(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")


def mcnemar_sample_size(
    fail_to_pass: int,
    pass_to_fail: int,
    pairs: int,
    *,
    alpha: float = ALPHA,
    power: float = POWER,
) -> int | None:
    """Paired trials a two-sided McNemar test needs to separate the observed discordance rates.

    Connor 1987 ("Sample size for testing differences in proportions for the paired-sample
    design", Biometrics 43:207-211): with discordance rates p10 = fail_to_pass / pairs and
    p01 = pass_to_fail / pairs, ψ = p10 + p01 and δ = p10 − p01,

        n = (z_{1−α/2} √ψ + z_{power} √(ψ − δ²))² / δ²   (rounded up).

    None when the observed rates cannot be separated at any size (no pair observed, or no
    difference between the discordance rates).
    """
    if pairs <= 0 or fail_to_pass == pass_to_fail:
        return None
    p10, p01 = fail_to_pass / pairs, pass_to_fail / pairs
    psi, delta = p10 + p01, p10 - p01
    z_alpha, z_beta = normal_quantile(1 - alpha / 2), normal_quantile(power)
    n = (z_alpha * math.sqrt(psi) + z_beta * math.sqrt(psi - delta * delta)) ** 2 / delta**2
    # Guard against 233.00000000001 becoming 234 through rounding.
    return math.ceil(n - 1e-9)


# Student's t 0.975 quantiles for 1…30 degrees of freedom (any table, e.g. NIST/SEMATECH
# e-Handbook 1.3.6.7.2); beyond 30 the Cornish-Fisher expansion is within 1e-3 of them.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` ≥ 1 degrees of freedom."""
    if df <= len(_T975):
        return _T975[df - 1]
    z = Z95
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)


def mean_interval(values: list[float]) -> tuple[float, tuple[float, float] | None] | None:
    """The mean of `values` and its 95% Student t interval (None below two values); None
    without values. A fact about the trials run, not a prediction of the next one."""
    if not values:
        return None
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return mean, (mean - half, mean + half)


def welch_interval(
    first: list[float], second: list[float]
) -> tuple[float, tuple[float, float] | None] | None:
    """Mean of `second` minus mean of `first` and its 95% Welch interval (independent samples,
    unequal variances; the Welch-Satterthwaite degrees of freedom rounded down, so the interval
    is never narrower). None without values on both sides; no interval below two on either."""
    if not first or not second:
        return None
    n1, n2 = len(first), len(second)
    m1, m2 = sum(first) / n1, sum(second) / n2
    difference = m2 - m1
    if n1 < 2 or n2 < 2:
        return difference, None
    v1 = sum((v - m1) ** 2 for v in first) / (n1 - 1) / n1
    v2 = sum((v - m2) ** 2 for v in second) / (n2 - 1) / n2
    if v1 + v2 == 0:
        return difference, (difference, difference)
    df = (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    half = t_quantile_975(max(1, math.floor(df))) * math.sqrt(v1 + v2)
    return difference, (difference - half, difference + half)
