"""Per-arm usage as facts: tokens, model calls, turns, tool calls, wall time and cost of each
variant across trials, and baseline→candidate, with 95% intervals across trials.

A skill that makes the agent twice as expensive is a finding even when every check passes.
Only runs whose subject started count (a run that never started spent nothing); the change
baseline→candidate pairs the two arms of the same trial, as the transitions do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..definitions import VARIANTS
from ..evidence import layout, read
from ..evidence.records import ArmFact, ArmUsage, UsageChange
from ..evidence.states import SIMULATED_MODES
from .stats import mean_interval

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


def arm_usage(trials: Sequence[Mapping[str, Mapping[str, Any] | None]]) -> ArmUsage | None:
    """The usage facts of one group over trials (each `{variant: run record or None}`)."""
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
    usage: ArmUsage = {
        "runs": {v: len(per[v]) for v in VARIANTS},
        "arms": {v: {name: _fact([f[name] for f in per[v]]) for name in FACTS} for v in VARIANTS},
        "change": {name: _change(pairs, name) for name in FACTS},
        "simulated": any(_simulated(t) for t in trials),
    }
    return usage


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
    """Candidate minus baseline per trial (paired), and candidate's mean over baseline's."""
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
    }


def group_usage(result_dirs: Sequence[Path], group: Mapping[str, Any]) -> ArmUsage | None:
    """The usage facts of one summarised group over the given trial results."""
    trials = []
    for result_dir in result_dirs:
        group_dir = layout.record_dir(result_dir, group)
        runs: dict[str, Mapping[str, Any] | None] = {}
        for variant in VARIANTS:
            found = read.read_run(group_dir / variant)
            runs[variant] = found[1] if found is not None else None
        trials.append(runs)
    return arm_usage(trials)
