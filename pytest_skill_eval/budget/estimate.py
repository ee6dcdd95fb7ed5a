"""Where the forecast is asked for: `skill-eval plan --estimate`, `--collect-only
--skill-eval-estimate DIR`, and a paid run under `--skill-eval-max-cost` before its first request.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..analysis import adaptive, sequential
from ..common.optionvalues import positive_int
from ..definitions import (
    VARIANTS,
    DefinitionError,
    LoadedGroup,
    SelectionError,
    load_definition,
    select,
)
from ..errors import SkillEvalError
from ..hosts.registry import registered
from ..modelserver.script import ScriptError
from . import needed
from .forecast import PriceOf, Trials, forecast, render, usd
from .prices import PriceTable


class EstimateError(SkillEvalError):
    """The forecast cannot be made (a definition or a recording it needs cannot be read)."""


def add_arguments(plan: argparse.ArgumentParser) -> None:
    """`skill-eval plan --estimate` and what only it reads."""
    plan.add_argument(
        "--estimate",
        action="store_true",
        help="print a forecast of a live run's cost per group, host and model (a range, from "
        "the usage recorded under --cassettes and real prices; --trials may be auto) instead "
        "of writing a plan",
    )
    needed.add_arguments(plan)
    plan.add_argument(
        "--max-trials",
        metavar="N",
        help="with --estimate --trials auto: the most trials "
        f"(default {sequential.DEFAULT_MAX_TRIALS})",
    )
    plan.add_argument(
        "--models",
        metavar="FILE",
        help="with --estimate: a Pi models.json whose `cost` prices models Pi's registry lacks "
        "(as the skill_eval_pi_models ini key does for a run)",
    )


def trials_of(trials: str, max_trials: str | None) -> Trials:
    """`--trials N|auto` and `--max-trials N` of `plan --estimate`."""
    if str(trials).strip().lower() == "auto":
        most = sequential.DEFAULT_MAX_TRIALS
        if max_trials is not None:
            most = positive_int("--max-trials", max_trials)
        return Trials(most, auto=True)
    if max_trials is not None:
        raise EstimateError(adaptive.MAX_WITHOUT_AUTO.replace("--skill-eval-", "--"))
    return Trials(positive_int("--trials", trials, "a positive integer such as 3, or auto"))


def plan_estimate(
    args: argparse.Namespace,
    paths: Sequence[Path],
    root: Path,
    price_of: PriceOf,
) -> list[str]:
    """The lines `skill-eval plan --estimate` prints."""
    trials = trials_of(args.trials, args.max_trials)
    selected: list[tuple[LoadedGroup, tuple[str, ...], tuple[str, ...]]] = []
    for path in paths:
        try:
            loaded = load_definition(path.resolve(), root, registered())
            picked = select(loaded, args.group, args.variant)
        except (DefinitionError, SelectionError) as error:
            raise EstimateError(str(error)) from None
        for choice in picked:
            group = choice.loaded.group
            hosts = tuple(h for h in args.host if group.cannot_run(h) is None) or (
                () if args.host else (group.effective_runtime.host,)
            )
            variants = tuple(v for v in VARIANTS if choice.variants[v])
            selected.append((choice.loaded, variants, hosts))
    cassettes = Path(args.cassettes).resolve() if args.cassettes else None
    counts = needed.trial_lines(args, selected, None if trials.auto else trials.count)
    lines = forecast_lines(selected, recordings_dir("--cassettes", cassettes), trials, price_of)
    return [*lines, *counts]


def recordings_dir(option: str, directory: Path | None) -> Path | None:
    """The directory to forecast from; one that is not there is the user's mistake, not a
    suite without recordings."""
    if directory is not None and not directory.is_dir():
        raise EstimateError(
            f"{option} {directory} is not a directory; pass the directory holding "
            "<group>/<variant>.yaml recordings"
        )
    return directory


def forecast_lines(
    selected: Iterable[tuple[LoadedGroup, Sequence[str], Sequence[str]]],
    recordings: Path | None,
    trials: Trials,
    price_of: PriceOf,
) -> list[str]:
    """The rendered forecast; an unreadable recording is one EstimateError naming it."""
    try:
        return render(forecast(selected, recordings, trials, price_of), trials)
    except ScriptError as error:
        raise EstimateError(f"{error}; fix or re-record it before forecasting from it") from None


def ceiling_lines(
    selected: Iterable[tuple[LoadedGroup, Sequence[str], Sequence[str]]],
    recordings: Path | None,
    trials: Trials,
    price_of: PriceOf,
    max_cost: float,
) -> list[str]:
    """Before a paid run's first request: the forecast when its upper bound exceeds the ceiling
    (none otherwise); what the forecast cannot see is said with it."""
    try:
        result = forecast(selected, recordings, trials, price_of)
    except ScriptError as error:
        return [f"cannot forecast against --skill-eval-max-cost: {error}"]
    low, high = result.total
    if high <= max_cost:
        return []
    return [
        f"the forecast's upper bound {usd(high, up=True)} exceeds --skill-eval-max-cost "
        f"{max_cost:g} (forecast {usd(low, up=False)} to {usd(high, up=True)}); the run may "
        "stop at the ceiling with groups cancelled",
        *render(result, trials)[1:],
    ]


@dataclass(frozen=True)
class _Located:
    """A binary found but not started: enough for a price source that reads its files."""

    path: Path
    version: str = ""


def price_function(models: Path | None, locate: Callable[[str], Path]) -> PriceOf:
    """Prices as a run would find them (`PriceTable`): `models` (a models.json), else each
    host's price source, reading the binary `locate` finds for a host only when it is asked."""
    return PriceTable(models, lambda host: _Located(locate(host))).price


def run_lines(
    groups: Iterable[LoadedGroup],
    *,
    selectors: Sequence[str],
    variant: str | None,
    hosts_for: Callable[[LoadedGroup], tuple[str, ...]],
    trials: Trials,
    price_of: PriceOf,
    estimate_dir: Path | None,
    collect_only: bool,
    paid: bool,
    max_cost: float | None,
    cassettes: Path | None,
) -> list[str]:
    """What a pytest invocation says about cost before anything runs: the forecast under
    `--collect-only --skill-eval-estimate DIR`, and, for a paid run (live or recording) under
    a ceiling, the forecast when its upper bound exceeds the ceiling."""
    if not collect_only and (not paid or max_cost is None):
        return []
    if collect_only and estimate_dir is None:
        return []
    recordings_dir("--skill-eval-estimate", estimate_dir)
    chosen = [
        (g, tuple(v for v in VARIANTS if variant in (None, v)), hosts_for(g))
        for g in groups
        if not selectors or g.group.id in selectors or str(g.position) in selectors
    ]
    chosen = [
        (g, vs, tuple(h for h in hs if g.group.cannot_run(h) is None)) for g, vs, hs in chosen
    ]
    # A recording run forecasts from the cassettes it completes, unless told otherwise.
    recordings = estimate_dir or (cassettes if paid else None)
    if collect_only:
        return forecast_lines(chosen, recordings, trials, price_of)
    assert max_cost is not None
    return ceiling_lines(chosen, recordings, trials, price_of, max_cost)
