"""`skill-eval compare A B --fail-on …`: which rows of a comparison fail the gate asked for.

A and B are independent runs, so each row's pass rates are two independent proportions:

- `regression`: any row whose status is regression;
- `significant-regression`: a one-sided Fisher test of B's rate below A's, Holm across rows;
- `no-harm --margin D`: every row must show B's rate is not lower than A's by D or more: the
  lower bound of Newcombe's hybrid score interval for B − A at confidence 1 − 2α lies above −D
  (a one-sided test at α of H0: B − A ≤ −D; Newcombe 1998). Rows are an intersection-union
  test: no adjustment. A row not shown names the trials per side a normal approximation says it
  would take at power 0.8; a row without observations on a side shows nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..analysis.significance import fisher_regression_p, holm
from ..analysis.stats import POWER, newcombe_difference, normal_quantile

FAIL_ON = ("regression", "significant-regression", "no-harm")


def gate_lines(
    report: Mapping[str, Any], fail_on: str, alpha: float, margin: float | None = None
) -> list[str]:
    """One line per row that fails `fail_on` (empty: B passes the gate)."""
    found = report["rows"]
    if fail_on == "regression":
        return [f"regression: {_row_name(r)}" for r in found if r["status"] == "regression"]
    if fail_on == "no-harm":
        assert margin is not None
        return [line for r in found if (line := _not_shown(r, alpha, margin))]
    p_values = [
        fisher_regression_p(r["a"]["pass"], _observed(r["a"]), r["b"]["pass"], _observed(r["b"]))
        for r in found
    ]
    adjusted, rejected = holm(p_values, alpha)
    return [
        f"significant regression: {_row_name(r)}: Holm-adjusted p={q:.4g}"
        for r, q, out in zip(found, adjusted, rejected, strict=True)
        if out
    ]


def _not_shown(entry: Mapping[str, Any], alpha: float, margin: float) -> str:
    """`no harm not shown: …` for a row whose interval reaches −margin; empty when shown."""
    a, b = entry["a"], entry["b"]
    z = normal_quantile(1 - alpha)
    found = newcombe_difference(a["pass"], _observed(a), b["pass"], _observed(b), z)
    head = f"no harm not shown: {_row_name(entry)}"
    if found is None:
        return f"{head}: a side has no observation"
    difference, lower, _ = found
    if lower > -margin:
        return ""
    rate = min(0.95, max(0.05, (a["pass"] + b["pass"]) / (_observed(a) + _observed(b))))
    per_side = math.ceil((z + normal_quantile(POWER)) ** 2 * 2 * rate * (1 - rate) / margin**2)
    return (
        f"{head}: b - a = {difference:.3g}, lower bound {lower:.3g} is not above -{margin:g}; "
        f"about {per_side} trials per side would be needed at power {POWER:g}"
    )


def _observed(side: Mapping[str, Any]) -> int:
    return int(side["pass"]) + int(side["fail"])


def _row_name(entry: Mapping[str, Any]) -> str:
    a, b = entry["a"], entry["b"]
    return (
        f"{entry['type']} {entry['group']}/{entry['id']} ({entry['variant']}) "
        f"a={a['pass']}/{_observed(a)} b={b['pass']}/{_observed(b)}"
    )
