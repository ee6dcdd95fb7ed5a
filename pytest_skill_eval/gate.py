"""`--skill-eval-fail-on significant-regression`: the suite's comparisons, gated together.

Reads the sealed grades of an invocation's trials (never writes evidence), gives every
comparison (per host) a p-value for "pass-to-fail beats fail-to-pass" — the exact one-sided
McNemar test over fixed trials, the always-valid sequential one over adaptive trials — and
rejects with Holm's procedure across all of them at alpha (`significance.py`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .evidence import layout, read
from .optionvalues import refuse
from .significance import holm, mcnemar_regression_p, sequential_regression_p
from .stats import ALPHA

MODE = "significant-regression"
DEFAULT_ALPHA = ALPHA
FAIL_ON_HELP = (
    "what fails the pytest run: infrastructure (default), candidate, any, regression (any "
    f"pass-to-fail), {MODE} (a comparison whose pass-to-fail pairs beat its fail-to-pass pairs "
    "beyond chance, Holm across all comparisons at --skill-eval-alpha)"
)
OPTION: tuple[str, str, dict[str, Any]] = (
    "alpha",
    "A",
    {"help": f"family-wise error rate of --skill-eval-fail-on {MODE} (default {ALPHA})"},
)


def alpha_value(raw: str | None) -> float:
    """--skill-eval-alpha: a number strictly between 0 and 1 (default 0.05)."""
    if raw in (None, ""):
        return ALPHA
    try:
        value = float(str(raw).strip())
    except ValueError:
        value = math.nan
    if 0 < value < 1:
        return value
    raise refuse("--skill-eval-alpha", raw, "a number between 0 and 1, such as 0.05")


@dataclass(frozen=True, slots=True)
class Tested:
    """One comparison of the suite with its raw and Holm-adjusted p-values."""

    name: str  # group/comparison, with "on <host>" where the suite ran on several hosts
    fail_to_pass: int
    pass_to_fail: int
    p: float
    adjusted: float
    rejected: bool

    def line(self) -> str:
        """The one line naming a rejected comparison."""
        return (
            f"significant regression: {self.name}: pass-to-fail {self.pass_to_fail}, "
            f"fail-to-pass {self.fail_to_pass}, Holm-adjusted p={self.adjusted:.4g}"
        )


def sequences(trial_dirs: Sequence[Path]) -> dict[tuple[str, str, str], list[str | None]]:
    """Per (group, host, comparison), its transition in each trial that graded it."""
    out: dict[tuple[str, str, str], list[str | None]] = {}
    for result_dir in trial_dirs:
        summary = read.summary_or_none(result_dir)
        for group in summary["groups"] if summary else []:
            host = layout.record_host(group)
            grade = read.read_grade(layout.record_dir(result_dir, group), group)
            for comparison in grade.get("comparisons", []) if grade is not None else []:
                key = (str(group["id"]), host, str(comparison["id"]))
                out.setdefault(key, []).append(comparison.get("transition"))
    return out


def evaluate(trial_dirs: Sequence[Path], *, adaptive: bool, alpha: float) -> list[Tested]:
    """Every comparison of the trials, tested and Holm-adjusted together."""
    found = sequences(trial_dirs)
    several_hosts = len({host for _, host, _ in found}) > 1
    names, counts, p_values = [], [], []
    for (group, host, comparison), seen in found.items():
        b, c = seen.count("fail-to-pass"), seen.count("pass-to-fail")
        names.append(f"{group}/{comparison}" + (f" on {host}" if several_hosts else ""))
        counts.append((b, c))
        p_values.append(sequential_regression_p(seen) if adaptive else mcnemar_regression_p(b, c))
    adjusted, rejected = holm(p_values, alpha)
    return [
        Tested(name, b, c, p, q, r)
        for name, (b, c), p, q, r in zip(names, counts, p_values, adjusted, rejected, strict=True)
    ]


def rejected(trial_dirs: Sequence[Path], *, adaptive: bool, alpha: float) -> list[str]:
    """One line per comparison the gate rejects (empty: the gate passes)."""
    return [t.line() for t in evaluate(trial_dirs, adaptive=adaptive, alpha=alpha) if t.rejected]
