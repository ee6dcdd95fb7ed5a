"""Checking one option value, for pytest's `--skill-eval-*` options and the `skill-eval` CLI.

Every refusal is one line that names the option, echoes the value as given and says what is
accepted: `--skill-eval-record "onc" is not accepted; use one of: none, once, all`. The pytest
glue turns the error into a usage error; the console script prints it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from ..errors import SkillEvalError


class OptionValueError(SkillEvalError):
    """An option was given a value it does not accept."""

    exit_code = 2


def refuse(option: str, value: Any, accepted: str) -> OptionValueError:
    """The error for `value` given to `option`; `accepted` says what to give instead."""
    return OptionValueError(f"{option} {_echo(value)} is not accepted; use {accepted}")


def choice(option: str, value: Any, choices: Sequence[str]) -> str:
    """`value` when it is one of `choices`."""
    if value in choices:
        return str(value)
    raise refuse(option, value, "one of: " + ", ".join(choices))


def positive_int(option: str, value: Any, accepted: str = "a positive integer such as 3") -> int:
    """`value` as an integer of at least 1."""
    text = str(value).strip()
    if text.isdecimal() and int(text) >= 1:
        return int(text)
    raise refuse(option, value, accepted)


def number(option: str, value: Any, *, zero: bool, unit: str) -> float:
    """`value` as a finite number, greater than zero (or at least zero with `zero`)."""
    try:
        parsed = float(str(value).strip())
    except ValueError:
        parsed = math.nan
    if math.isfinite(parsed) and (parsed >= 0 if zero else parsed > 0):
        return parsed
    bound = "zero or more" if zero else "greater than zero"
    raise refuse(option, value, f"a number of {unit} {bound}, such as 2.5")


def shard_of(option: str, value: Any) -> tuple[int, int] | None:
    """`K/N` as (K, N) with 1 <= K <= N; None when not given."""
    if value in (None, ""):
        return None
    k, _, n = str(value).partition("/")
    if k.isdecimal() and n.isdecimal() and 1 <= int(k) <= int(n):
        return int(k), int(n)
    raise refuse(option, value, "K/N with 1 <= K <= N, such as 2/4")


def _echo(value: Any) -> str:
    text = json.dumps(str(value), ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"
