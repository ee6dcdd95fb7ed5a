"""`--skill-eval-fail-on significant-regression` and `--skill-eval-alpha` as options: their
names, help and value check.

Apart from `gate`, which evaluates the gate after the run, because every process parses the
options and only the controller gates.
"""

from __future__ import annotations

import math
from typing import Any

from ..common.optionvalues import refuse
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
