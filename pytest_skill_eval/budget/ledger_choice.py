"""Which ledger an invocation uses: its options checked before anything runs, the ledger
opened from their values (Redis at a URL, else a file under the results directory), and the
ledger a controller hands to an xdist worker opened again there."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..common.optionvalues import number
from .ledger import FileLedger, Ledger
from .ledger_url import check_url
from .redis_ledger import RedisLedger


def reserve_value(raw: Any) -> float | None:
    """`--skill-eval-reserve` in USD (None when not given); a SkillEvalError says what is
    wrong."""
    if raw in (None, ""):
        return None
    return number("--skill-eval-reserve", raw, zero=True, unit="USD")


def ledger_problem(url: str | None, max_cost: float | None, reserve: float | None) -> str | None:
    """Why these ledger settings cannot work (one line naming the fix), else None."""
    if url is None:
        if reserve is None:
            return None
        return (
            "--skill-eval-reserve holds room in a shared ledger: give --skill-eval-ledger-url "
            "redis://host:port/db too, or drop it"
        )
    problem = check_url(url)
    if problem is None and max_cost is None:
        problem = (
            "--skill-eval-ledger-url needs a ceiling: give --skill-eval-max-cost USD (the "
            "whole run's, the same on every shard), or a plan made with --max-cost"
        )
    return problem


def ledger_from(handed: Mapping[str, Any], ledger_url: str | None = None) -> Ledger:
    """The ledger a controller handed to an xdist worker (`Ledger.handover`); a Redis ledger is
    reached through the worker's own `ledger_url` (it may carry the password)."""
    if handed.get("kind") == "redis":
        reserve = handed.get("reserve")
        return RedisLedger(
            ledger_url or str(handed["url"]),
            str(handed["key"]),
            float(handed["maxCost"]),
            None if reserve is None else float(reserve),
        )
    return FileLedger(Path(handed["path"]), float(handed["maxCost"]))


def open_ledger(
    url: str | None,
    max_cost: float | None,
    key: str,
    reserve: float | None,
    results_dir: Path,
) -> Ledger | None:
    """The invocation's ledger: the Redis ledger at `url` (`--skill-eval-ledger-url`, under
    `key`), else a fresh file ledger under `results_dir` when there is a ceiling, else None."""
    if max_cost is None:
        return None
    if url is not None:
        return RedisLedger.open(url, key, max_cost, reserve)
    results_dir.mkdir(parents=True, exist_ok=True)
    ledger_dir = Path(tempfile.mkdtemp(prefix=".budget-", dir=results_dir))
    return FileLedger.create(ledger_dir / "ledger.json", max_cost)
