"""Per-arm usage as facts: tokens, model calls, turns, tool calls, wall time and cost of each
variant across trials, and baseline→candidate, with 95% intervals across trials.

A skill that makes the agent twice as expensive is a finding even when every check passes.
Only runs whose subject started count (a run that never started spent nothing); the change
baseline→candidate pairs the two arms of the same trial, as the transitions do, unless an arm
was reused from an earlier result: a reused run pairs with no new one, so the change is then
the difference of the arms' means with Welch's interval (`method: unpaired-welch`).

What an invocation spent (`spentUsd`) is its own runs' cost and their earlier attempts'
(`--skill-eval-retries`: an infrastructure-failed attempt may have paid for calls), never a
reused run's, which the invocation that ran it paid for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..definitions import VARIANTS
from ..evidence import layout, read
from ..evidence.aggregates import ArmFact, ArmUsage, AttemptsUsage, UsageChange
from ..evidence.states import SIMULATED_MODES
from .stats import mean_interval, welch_interval

# Fact name → what it counts (in the order every view shows them).
FACTS = {
    "input": "input tokens",
    "output": "output tokens",
    "cached": "cached input tokens (read from the provider's cache)",
    "modelCalls": "model calls",
    "turns": "turns",
    "toolCalls": "tool calls",
    "wallTimeMs": "wall time in milliseconds",
    "costUsd": "cost in USD (simulated for scripted and replayed runs)",
}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def run_facts(run: Mapping[str, Any]) -> dict[str, float | None]:
    """One run's facts; None where the run cannot tell (a host that reports no usage)."""
    usage = read.mapping(run.get("usage"))
    turns = [t for t in run.get("turns") or [] if isinstance(t, Mapping)]
    times = [_number(t.get("wallTimeMs")) for t in turns]
    return {
        "input": _number(usage.get("input")),
        "output": _number(usage.get("output")),
        "cached": _number(usage.get("cacheRead")),
        "modelCalls": _number(run.get("modelCalls")),
        "turns": float(len(turns)),
        "toolCalls": float(sum(len(t.get("toolActivity") or []) for t in turns)),
        "wallTimeMs": sum(t for t in times if t is not None) if turns else None,
        "costUsd": spend_of(run)[0],
    }


def started(run: Mapping[str, Any] | None) -> bool:
    """Whether a run's subject started (so it may have spent)."""
    return run is not None and run.get("startedAt") is not None


# Why a change is not paired by trial, as `aggregate.json` says it.
UNPAIRED = (
    "an arm was reused from an earlier result: its runs pair with no run of this invocation, "
    "so the change is the difference of the arms' means with Welch's interval"
)

Runs = Mapping[str, Mapping[str, Any] | None]


def reused(run: Mapping[str, Any] | None) -> bool:
    """Whether a run record was copied from an earlier result (`--skill-eval-reuse`)."""
    return run is not None and isinstance(run.get("reused"), Mapping)


def arm_usage(
    trials: Sequence[Runs], attempts: Sequence[Mapping[str, Sequence[Mapping[str, Any]]]] = ()
) -> ArmUsage | None:
    """The usage facts of one group over trials (each `{variant: run record or None}`), with
    each trial's earlier attempts (`{variant: [their run records]}`) counted as spent."""
    per: dict[str, list[dict[str, float | None]]] = {v: [] for v in VARIANTS}
    pairs: list[tuple[dict[str, float | None], dict[str, float | None]]] = []
    for runs in trials:
        facts = {v: run_facts(r) for v in VARIANTS if started(r := runs.get(v)) and r}
        for variant, found in facts.items():
            per[variant].append(found)
        if len(facts) == len(VARIANTS):
            pairs.append((facts["baseline"], facts["candidate"]))
    if not any(per.values()):
        return None
    copied: dict[str, int] = {
        v: sum(1 for t in trials if started(t.get(v)) and reused(t.get(v))) for v in VARIANTS
    }
    earlier = {v: [r for t in attempts for r in t.get(v, ()) if started(r)] for v in VARIANTS}
    unpaired = any(copied.values())
    usage: ArmUsage = {
        "runs": {v: len(per[v]) for v in VARIANTS},
        "arms": {v: {name: _fact([f[name] for f in per[v]]) for name in FACTS} for v in VARIANTS},
        "change": {
            name: _unpaired(per, name) if unpaired else _change(pairs, name) for name in FACTS
        },
        "simulated": any(_simulated(t) for t in trials),
        "reused": copied,
        "attempts": {v: _attempts(earlier[v]) for v in VARIANTS},
        "spentUsd": {v: _spent(trials, earlier[v], v) for v in VARIANTS},
    }
    return usage


def _attempts(runs: Sequence[Mapping[str, Any]]) -> AttemptsUsage:
    """An arm's earlier attempts: how many started, their model calls and their cost."""
    calls = [c for r in runs if (c := _number(r.get("modelCalls"))) is not None]
    costs = [c for r in runs if (c := spend_of(r)[0]) is not None]
    return {
        "runs": len(runs),
        "modelCalls": sum(calls) if calls else (0.0 if not runs else None),
        "costUsd": sum(costs) if costs else (0.0 if not runs else None),
    }


def _spent(
    trials: Sequence[Runs], earlier: Sequence[Mapping[str, Any]], variant: str
) -> float | None:
    """What this invocation spent on an arm: its own started runs and their earlier attempts
    (None when one of them cannot tell its cost)."""
    own = [r for t in trials if started(r := t.get(variant)) and r and not reused(r)]
    costs = [spend_of(r)[0] for r in [*own, *earlier]]
    known = [c for c in costs if c is not None]
    return sum(known) if len(known) == len(costs) else None


def spend_of(run: Mapping[str, Any]) -> tuple[float | None, bool]:
    """What a run cost in USD and whether only simulated; records written before `spend`
    existed give the host's priced total and their provider mode."""
    spend = read.mapping(run.get("spend"))
    usd = _number(spend.get("usd"))
    if usd is not None:
        return usd, bool(spend.get("simulated"))
    mode = read.mapping(run.get("provider")).get("mode")
    return read.run_cost(run), mode in SIMULATED_MODES


def _simulated(runs: Mapping[str, Mapping[str, Any] | None]) -> bool:
    return any(spend_of(r)[1] for r in runs.values() if started(r) and r)


def _fact(values: list[float | None]) -> ArmFact:
    known = [v for v in values if v is not None]
    found = mean_interval(known)
    # Every fact counts or measures something: an arm's interval never goes below zero.
    return {
        "mean": found[0] if found else None,
        "interval": [max(0.0, found[1][0]), found[1][1]] if found and found[1] else None,
        "trials": len(known),
    }


def _change(
    pairs: list[tuple[dict[str, float | None], dict[str, float | None]]], name: str
) -> UsageChange:
    """Candidate minus baseline per trial (paired), and candidate's sum over baseline's."""
    both = [(b[name], c[name]) for b, c in pairs if b[name] is not None and c[name] is not None]
    differences = [c - b for b, c in both if b is not None and c is not None]
    found = mean_interval(differences)
    base = sum(b for b, _ in both if b is not None)
    cand = sum(c for _, c in both if c is not None)
    return {
        "pairs": len(differences),
        "difference": found[0] if found else None,
        "interval": list(found[1]) if found and found[1] else None,
        "ratio": cand / base if both and base else None,
        "method": "paired",
    }


def _unpaired(per: Mapping[str, list[dict[str, float | None]]], name: str) -> UsageChange:
    """Candidate's mean minus baseline's over every run of each arm, with Welch's interval."""
    base = [v for f in per["baseline"] if (v := f[name]) is not None]
    cand = [v for f in per["candidate"] if (v := f[name]) is not None]
    found = welch_interval(base, cand)
    base_mean = sum(base) / len(base) if base else None
    return {
        "pairs": 0,
        "difference": found[0] if found else None,
        "interval": list(found[1]) if found and found[1] else None,
        "ratio": (sum(cand) / len(cand)) / base_mean if cand and base_mean else None,
        "method": "unpaired-welch",
        "unpaired": UNPAIRED,
    }


def group_usage(result_dirs: Sequence[Path], group: Mapping[str, Any]) -> ArmUsage | None:
    """The usage facts of one summarised group over the given trial results."""
    trials = []
    attempts = []
    for result_dir in result_dirs:
        group_dir = layout.record_dir(result_dir, group)
        runs: dict[str, Mapping[str, Any] | None] = {}
        earlier: dict[str, list[Mapping[str, Any]]] = {}
        for variant in VARIANTS:
            found = read.read_run(group_dir / variant)
            runs[variant] = found[1] if found is not None else None
            earlier[variant] = _earlier_attempts(group_dir / variant, runs[variant])
        trials.append(runs)
        attempts.append(earlier)
    return arm_usage(trials, attempts)


def _earlier_attempts(variant_dir: Path, run: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The run records of a variant's earlier attempts, as its final run record lists them."""
    listed = run.get("attempts") if run is not None else None
    found: list[Mapping[str, Any]] = []
    for attempt in listed if isinstance(listed, list) else []:
        evidence = attempt.get("evidence") if isinstance(attempt, Mapping) else None
        if isinstance(evidence, str):
            earlier = read.read_run(variant_dir / evidence)
            if earlier is not None:
                found.append(earlier[1])
    return found
