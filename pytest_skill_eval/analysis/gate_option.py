"""`--skill-eval-fail-on significant-regression|no-harm`, `--skill-eval-alpha` and
`--skill-eval-margin` as options: their names, help and value checks.

Apart from `gate` and `noninferiority`, which evaluate the gates after the run, because every
process parses the options and only the controller gates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..common.optionvalues import OptionValueError, refuse
from .stats import ALPHA

MODE = "significant-regression"
NO_HARM = "no-harm"
DEFAULT_ALPHA = ALPHA
FAIL_ON_HELP = (
    "what fails the pytest run: infrastructure (default), candidate, any, regression (any "
    f"pass-to-fail), {MODE} (a comparison whose pass-to-fail pairs beat its fail-to-pass pairs "
    f"beyond chance, Holm across all comparisons at --skill-eval-alpha), {NO_HARM} (unless "
    "every comparison shows its candidate's pass rate is not lower than its baseline's by "
    "--skill-eval-margin or more, at --skill-eval-alpha; too few trials fail it)"
)
OPTION: tuple[str, str, dict[str, Any]] = (
    "alpha",
    "A",
    {
        "help": f"error rate of --skill-eval-fail-on {MODE} (family-wise) or {NO_HARM} "
        f"(default {ALPHA})"
    },
)
MARGIN_OPTION: tuple[str, str, dict[str, Any]] = (
    "margin",
    "D",
    {
        "help": f"with --skill-eval-fail-on {NO_HARM}: the most the candidate's pass rate may "
        "fall below the baseline's and still be no harm, a number between 0 and 1 such as 0.1"
    },
)


def values(option: Callable[[str], str | None], fail_on: str) -> tuple[float, float | None]:
    """--skill-eval-alpha and --skill-eval-margin under `fail_on`, from `option(name)`."""
    return alpha_value(option("alpha")), margin_value(option("margin"), fail_on)


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


def margin_value(
    raw: str | None, fail_on: str, option: str = "--skill-eval-margin"
) -> float | None:
    """The no-harm margin: required with `no-harm`, refused without it (it would gate nothing)."""
    mode = option.replace("margin", "fail-on")
    if raw in (None, ""):
        if fail_on == NO_HARM:
            raise OptionValueError(
                f"{mode} {NO_HARM} needs a declared margin: add {option} D, such as 0.1 (the "
                "most the candidate's pass rate may fall below the baseline's)"
            )
        return None
    if fail_on != NO_HARM:
        raise OptionValueError(
            f"{option} {raw} is given without {mode} {NO_HARM}; add {mode} {NO_HARM}, or leave "
            "the margin out"
        )
    try:
        value = float(str(raw).strip())
    except ValueError:
        value = math.nan
    if 0 < value < 1:
        return value
    raise refuse(option, raw, "a number between 0 and 1, such as 0.1")
