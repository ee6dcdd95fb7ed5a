"""A live run's cost before it is spent: recorded usage × the provider's real prices × trials.

Each selected variant of a group is priced from the usage its recordings (cassettes or
scripts) report, at the price the group's declared model has (Pi's registry or `cost` in
models.json), times the trials the run may take: N, or with `--skill-eval-trials auto` from
the fewest that can resolve a comparison to the maximum. The range spans the cheapest and the
dearest recording of each variant. A variant with no recording is priced from a stated
fallback per turn and named; a group whose model has no known price is named and left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..analysis.sequential import agreeing_stop, rejects
from ..definitions import LoadedGroup
from ..modelserver.script import Script, Usage
from ..modelserver.scriptparse import load_script
from ..modelserver.scriptpaths import script_path

# USD per million tokens of `provider/model`, or None when the price is unknown.
PriceOf = Callable[[str, str, str], "Mapping[str, float] | None"]

# Per declared prompt of a variant without a recording: from one model call of the low usage
# to ten calls of the high one (an agent turn's usual spread; stated wherever it is used).
FALLBACK_CALLS = (1, 10)
FALLBACK_LOW = Usage(input=2_000, output=200)
FALLBACK_HIGH = Usage(input=20_000, output=1_000)
FALLBACK_TEXT = (
    f"{FALLBACK_CALLS[0]} model call of {FALLBACK_LOW.input:,} input and "
    f"{FALLBACK_LOW.output:,} output tokens to {FALLBACK_CALLS[1]} calls of "
    f"{FALLBACK_HIGH.input:,} and {FALLBACK_HIGH.output:,} per turn"
)


@dataclass(frozen=True, slots=True)
class Trials:
    """How many trials a run asks for: N, or `auto` up to a maximum."""

    count: int
    auto: bool = False

    def span(self, has_comparisons: bool) -> tuple[int, int]:
        """The fewest and the most trials one group may run."""
        if not self.auto:
            return self.count, self.count
        if not has_comparisons:
            return 1, 1  # nothing to resolve: auto runs one trial
        if not rejects(self.count, 0):
            return 1, 1  # no comparison can resolve by the maximum: each stops after one
        return min(self.resolving, self.agreeing), self.count

    @property
    def resolving(self) -> int:
        """Under auto: the trials a comparison takes to resolve when the arms differ in every
        one (the maximum when even that is too few)."""
        return next((n for n in range(1, self.count + 1) if rejects(n, 0)), self.count)

    @property
    def agreeing(self) -> int:
        """Under auto: the trials after which a comparison whose arms agree in every one stops
        for futility (the maximum when it never does)."""
        return agreeing_stop(self.count)


@dataclass(frozen=True, slots=True)
class Row:
    """One group on one host: what one trial costs and what the run may cost, in USD."""

    group: str
    host: str
    model: str | None  # provider/model as declared; None: the host's own default
    trials: tuple[int, int]
    # Variants priced from recordings, and those priced from the fallback.
    recorded: tuple[str, ...]
    unrecorded: tuple[str, ...]
    per_trial: tuple[float, float] | None  # None: the model has no known price
    why_unpriced: str | None = None

    @property
    def total(self) -> tuple[float, float] | None:
        """The run's range for this group: fewest trials × cheapest, most × dearest."""
        if self.per_trial is None:
            return None
        return self.trials[0] * self.per_trial[0], self.trials[1] * self.per_trial[1]


@dataclass(frozen=True, slots=True)
class Forecast:
    """Every selected group's row, and the run's range over the priced ones."""

    rows: tuple[Row, ...]
    recordings: Path | None

    @property
    def total(self) -> tuple[float, float]:
        """The sum of the priced rows' ranges."""
        priced = [row.total for row in self.rows if row.total is not None]
        return sum(t[0] for t in priced), sum(t[1] for t in priced)

    @property
    def unpriced(self) -> tuple[Row, ...]:
        """Rows whose model has no known price (left out of the total)."""
        return tuple(row for row in self.rows if row.per_trial is None)

    @property
    def unrecorded(self) -> tuple[Row, ...]:
        """Rows with a variant that has no recording to estimate from."""
        return tuple(row for row in self.rows if row.unrecorded)


def usage_cost(usage: Usage, prices: Mapping[str, float]) -> float:
    """USD of one answer's usage at `prices` (per million tokens), as a recording is charged."""
    return (
        usage.input * prices.get("input", 0.0)
        + usage.output * prices.get("output", 0.0)
        + usage.cache_read * prices.get("cacheRead", 0.0)
        + usage.cache_write * prices.get("cacheWrite", 0.0)
    ) / 1_000_000


def script_cost(script: Script, prices: Mapping[str, float]) -> float:
    """What answering every interaction of `script` costs (an error answer costs nothing)."""
    return sum(
        usage_cost(i.response.usage, prices)
        for i in script.interactions
        if i.response.error is None
    )


def recordings_of(
    directory: Path | None, group: str, variant: str, host: str, trials: int
) -> list[Path]:
    """The distinct recordings trials 1…`trials` of a variant would be answered from."""
    if directory is None:
        return []
    found = (script_path(directory, group, variant, t, host) for t in range(1, trials + 1))
    return list(dict.fromkeys(path for path in found if path is not None))


def forecast(
    selected: Iterable[tuple[LoadedGroup, Sequence[str], Sequence[str]]],
    recordings: Path | None,
    trials: Trials,
    price_of: PriceOf,
) -> Forecast:
    """The forecast of (group, selected variants, hosts) triples.

    Raises `ScriptError` for a recording that cannot be read (naming the file).
    """
    rows = [
        _row(loaded, tuple(variants), host, recordings, trials, price_of)
        for loaded, variants, hosts in selected
        for host in hosts
    ]
    return Forecast(tuple(rows), recordings)


def _row(
    loaded: LoadedGroup,
    variants: tuple[str, ...],
    host: str,
    recordings: Path | None,
    trials: Trials,
    price_of: PriceOf,
) -> Row:
    group = loaded.group
    span = trials.span(any(e.comparison is not None for e in group.expectations))
    model = group.model.model if group.model is not None else None
    found = {v: recordings_of(recordings, group.id, v, host, span[1]) for v in variants}
    recorded = tuple(v for v in variants if found[v])
    unrecorded = tuple(v for v in variants if not found[v])
    base = Row(group.id, host, model, span, recorded, unrecorded, None)
    if model is None:
        why = "declares no model, so a live run uses the host's own default, whose price is unknown"
        return _replace_why(base, why)
    provider, _, model_id = model.partition("/")
    prices = price_of(provider, model_id, host)
    if prices is None:
        return _replace_why(base, f"model {model} has no known price")
    low = high = 0.0
    for variant in recorded:
        costs = [script_cost(load_script(path), prices) for path in found[variant]]
        low, high = low + min(costs), high + max(costs)
    turns = len(group.turns)
    low += len(unrecorded) * turns * FALLBACK_CALLS[0] * usage_cost(FALLBACK_LOW, prices)
    high += len(unrecorded) * turns * FALLBACK_CALLS[1] * usage_cost(FALLBACK_HIGH, prices)
    return Row(group.id, host, model, span, recorded, unrecorded, (low, high))


def _replace_why(row: Row, why: str) -> Row:
    return Row(row.group, row.host, row.model, row.trials, row.recorded, row.unrecorded, None, why)


def usd(value: float, *, up: bool) -> str:
    """A dollar amount to a millionth, rounded outward so a range never shrinks when shown."""
    scaled = value * 1_000_000
    whole = math.ceil(scaled - 1e-6) if up else math.floor(scaled + 1e-6)
    return f"${whole / 1_000_000:.6f}"


def span_text(low: float, high: float) -> str:
    """`$L to $H` (the outward-rounded range)."""
    return f"{usd(low, up=False)} to {usd(high, up=True)}"


def render(result: Forecast, trials: Trials) -> list[str]:
    """The forecast as lines: one per group and host, the total, and what it could not see."""
    asked = f"auto, at most {trials.count}" if trials.auto else str(trials.count)
    source = str(result.recordings) if result.recordings else "no recordings given"
    lines = [f"forecast of a live run: trials {asked}; usage from {source}"]
    for row in result.rows:
        fewest, most = row.trials
        count = f"{fewest}" if fewest == most else f"{fewest} to {most}"
        where = f"{row.group} on {row.host}, {row.model or 'no model declared'}"
        if row.per_trial is None or row.total is None:
            lines.append(f"  {where}: not priced ({row.why_unpriced})")
            continue
        lines.append(
            f"  {where}: {span_text(*row.total)} ({count} trial(s) of "
            f"{span_text(*row.per_trial)} each)"
        )
    lines.append(f"total: {span_text(*result.total)}")
    if trials.auto and any(row.trials[0] != row.trials[1] for row in result.rows):
        lines.append(
            f"auto: a group stops after {trials.agreeing} trials when its arms agree in every "
            f"one (futility), after {trials.resolving} when they differ in every one "
            f"(resolved), and runs up to {trials.count} only while a comparison may still "
            "resolve"
        )
    for row in result.unrecorded:
        lines.append(
            f"no recording: {row.group} on {row.host} ({', '.join(row.unrecorded)}); "
            f"estimated from the fallback of {FALLBACK_TEXT}"
        )
    if result.unpriced:
        names = ", ".join(f"{row.group} on {row.host}" for row in result.unpriced)
        lines.append(f"not in the total (no known price): {names}")
    return lines
