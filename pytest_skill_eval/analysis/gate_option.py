"""The statistical gates' option values: the modes `significant-regression` and `no-harm` by
name, `--skill-eval-alpha` with its help, and the value checks of the alpha and of the no-harm
margin (the pytest option the no-harm feature declares, and `skill-eval compare --margin`).

Apart from `gate` and `noninferiority`, which evaluate the gates after the run, because every
process parses the options and only the controller gates.
"""

from __future__ import annotations

import math
from typing import Any

from ..common.optionvalues import OptionValueError, refuse
from .stats import ALPHA

MODE = "significant-regression"
NO_HARM = "no-harm"
DEFAULT_ALPHA = ALPHA
OPTION: tuple[str, str, dict[str, Any]] = (
    "alpha",
    "A",
    {
        "help": f"error rate of --skill-eval-fail-on {MODE} (family-wise) or {NO_HARM} "
        f"(default {ALPHA})"
    },
)


def alpha_value(raw: str | None) -> float:
    """--skill-eval-alpha: a number strictly between 0 and 1 (default 0.05)."""
    return ALPHA if raw in (None, "") else _share(str(raw), "--skill-eval-alpha", "0.05")


def margin_value(raw: str | None, fail_on: str, option: str) -> float | None:
    """The no-harm margin given to `option`: required when `fail_on` is `no-harm`, refused
    otherwise (it would gate nothing)."""
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
    return _share(str(raw), option, "0.1")


def _share(raw: str, option: str, example: str) -> float:
    """`raw` as a number strictly between 0 and 1; else the line refusing it for `option`."""
    try:
        value = float(raw.strip())
    except ValueError:
        value = math.nan
    if 0 < value < 1:
        return value
    raise refuse(option, raw, f"a number between 0 and 1, such as {example}")
