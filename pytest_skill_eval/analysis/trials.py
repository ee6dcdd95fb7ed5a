"""Aggregates over trials: counts, Wilson intervals, exact McNemar tests. Facts, not verdicts."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from ..definitions import VARIANTS
from ..evidence import layout, read
from ..evidence.aggregates import (
    AdaptiveRun,
    AggregateCheck,
    AggregateComparison,
    AggregateGroup,
    AggregateRecord,
    CannotRunTrials,
    Consistency,
    CrossHostRow,
    CrossHostTable,
    Fingerprint,
    GroupAdaptive,
    Rate,
    SampleSize,
    TrialRow,
    Unpaired,
)
from ..evidence.records import Budget
from ..evidence.states import aggregate_state
from ..evidence.store import utc_now
from ..evidence.summary import write_aggregate as write_aggregate_record
from . import noise_floor, offered
from .sequential import FUTILITY_REASONS, METHOD, METHOD_TEXT, decide
from .stats import (
    ALPHA,
    Z95,
    fisher_exact,
    mcnemar_exact,
    mcnemar_sample_size,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)
from .tally import TRANSITIONS, CheckTally, ComparisonTally, GroupTally, count_group, recorded
from .triggers import trigger_rates
from .usage import group_usage

__all__ = ["ALPHA", "Z95", "aggregate", "mcnemar_exact", "wilson_interval", "write_aggregate"]

# The fewest discordant pairs for which the exact two-sided McNemar test can reach p < 0.05.
EXACT_MIN_DISCORDANT = next(d for d in range(1, 64) if mcnemar_exact(d, 0) < ALPHA)


def _group_row(
    entry: GroupTally, adaptive: bool, requested: int, exhausted: bool
) -> AggregateGroup:
    """A group's aggregate row: its checks' and comparisons' statistics over the trials."""
    checks = [_check_stats(row) for row in entry.checks.values()]
    reused = sorted(entry.reused)
    comparisons = [_comparison_stats(row, reused) for row in entry.comparisons.values()]
    row: AggregateGroup = {
        "id": entry.id,
        "trials": entry.trials,
        "comparisons": comparisons,
        "checks": checks,
    }
    offered.record(row, entry.offered)
    if entry.host != layout.DEFAULT_HOST:
        row["host"] = entry.host
    usage = group_usage(entry.results, {"id": entry.id, "host": entry.host})
    if usage is not None:
        row["usage"] = usage
    if entry.retries:
        row["retries"] = entry.retries
    if adaptive:
        row["adaptive"] = _adaptive_group(comparisons, entry, requested, exhausted)
    return row


def aggregate(
    aggregate_id: str,
    trials: Sequence[Path],
    requested: int,
    budget: Mapping[str, Any] | None = None,
    *,
    adaptive: bool = False,
) -> AggregateRecord:
    """The aggregate.json content for completed trial results (reference §6.5 plus statistics).

    With `adaptive` (`--skill-eval-trials auto`, `requested` its maximum), each comparison's
    decision is the sequential test's, and each group says how many trials it used and why it
    stopped.
    """
    trial_rows: list[TrialRow] = []
    groups: dict[str, GroupTally] = {}
    fingerprints: list[Fingerprint] = []
    cannot: dict[tuple[str, str], CannotRunTrials] = {}
    for index, result_dir in enumerate(trials):
        summary = read.summary_or_none(result_dir)
        trial_rows.append(
            {"id": result_dir.name, "state": summary["state"] if summary else "cancelled"}
        )
        invocation = read.load_invocation(result_dir)
        if invocation is not None:
            fingerprints.append(
                {"definitions": invocation.get("definitions"), "pins": invocation.get("pins")}
            )
        for fact in read.cannot_run_facts(invocation):
            # Counted apart: a host that cannot run a group is neither its pass nor its fail.
            counted = cannot.setdefault(
                (fact["group"], fact["host"]),
                {
                    "group": fact["group"],
                    "host": fact["host"],
                    "reason": fact["reason"],
                    "trials": 0,
                },
            )
            counted["trials"] += 1
        for group in summary["groups"] if summary else []:
            count_group(groups, group, result_dir, index, len(trials))
    exhausted = bool(budget and budget.get("exhausted"))
    out_groups = [_group_row(e, adaptive, requested, exhausted) for e in groups.values()]
    identical = all(f == fingerprints[0] for f in fingerprints) if fingerprints else True
    result: AggregateRecord = {
        "schema_version": 1,
        "kind": "aggregate",
        "id": aggregate_id,
        # Under `auto`, the trials that ran are the ones asked for: the rest were not needed.
        "state": aggregate_state(
            (row["state"] for row in trial_rows), len(trial_rows) if adaptive else requested
        ),
        "requestedTrials": requested,
        "trials": trial_rows,
        "inputs": {"identical": identical, "fingerprints": fingerprints[:1]},
        "groups": out_groups,
        "triggerRates": trigger_rates(trials),
        "crossHost": cross_host(out_groups, list(cannot.values())),
        "completedAt": utc_now(),
    }
    if budget is not None:
        result["budget"] = cast(Budget, dict(budget))
    if cannot:
        result["cannotRun"] = list(cannot.values())
    if any(noise_floor.measured_by(t) for t in trials):
        result["noiseFloor"] = noise_floor.measure(trials)
    if adaptive:
        result["adaptive"] = _adaptive_run(requested, len(trial_rows))
    return result


def _adaptive_run(requested: int, run: int) -> AdaptiveRun:
    """How `--skill-eval-trials auto` decided: its test, its error rate and the trials it ran."""
    return {
        "method": METHOD,
        "description": METHOD_TEXT,
        "alpha": ALPHA,
        "maxTrials": requested,
        "trialsRun": run,
    }


def cross_host(
    groups: Sequence[AggregateGroup], cannot_run: Sequence[CannotRunTrials] = ()
) -> list[CrossHostTable]:
    """Per group that ran on several hosts: each check's, comparison's and offered target's
    counts per host, and whether they held on every host that can run it (the same counts
    everywhere); a host that cannot run it is named with the reason, without counts."""
    by_id: dict[str, list[AggregateGroup]] = {}
    for group in groups:
        by_id.setdefault(group["id"], []).append(group)
    tables: list[CrossHostTable] = []
    for group_id, runs in by_id.items():
        reasons = {f["host"]: f["reason"] for f in cannot_run if f["group"] == group_id}
        if len(runs) + len(reasons) < 2:
            continue
        hosts = [layout.record_host(run) for run in runs]
        rows: dict[tuple[str, str], dict[str, dict[str, int | None]]] = {}
        for host, run in zip(hosts, runs, strict=True):
            for check in run["checks"]:
                counts: dict[str, int | None] = {
                    "pass": check.get("pass"),
                    "fail": check.get("fail"),
                    "unavailable": check.get("unavailable"),
                }
                rows.setdefault(("check", check["id"]), {})[host] = counts
            for comparison in run["comparisons"]:
                transitions: dict[str, int | None] = dict(comparison.get("transitions") or {})
                rows.setdefault(("comparison", comparison["id"]), {})[host] = transitions
            for key, trials in offered.cross_host_cells(run):
                rows.setdefault(key, {})[host] = trials
        out_rows: list[CrossHostRow] = []
        for (kind, identity), by_host in rows.items():
            per_host = {host: by_host.get(host) for host in hosts}
            values = [json_key(v) for v in per_host.values()]
            out_rows.append(
                {"kind": kind, "id": identity, "hosts": per_host, "held": len(set(values)) == 1}
            )
        table: CrossHostTable = {
            "id": group_id,
            "hosts": [*hosts, *reasons],
            "held": all(row["held"] for row in out_rows),
            "rows": out_rows,
        }
        if reasons:
            table["cannotRun"] = reasons
        tables.append(table)
    return tables


def json_key(value: Any) -> str:
    """A comparable text form of a JSON value (dict order does not matter)."""
    return json.dumps(value, sort_keys=True)


def _adaptive_group(
    comparisons: list[AggregateComparison],
    entry: GroupTally,
    maximum: int,
    exhausted: bool,
) -> GroupAdaptive:
    """Each comparison's sequential decision (in place) and why the group stopped where it did.

    A comparison is resolved at the first trial whose E-value reached 1/alpha; an unresolved
    one stopped at the maximum, for futility (`cannot-resolve`, `unlikely-to-resolve`), because
    the budget ran out, or because the run ended early (cancelled, deselected).
    """
    seen: Mapping[str, list[str | None]] = entry.sequences
    used = entry.trials - entry.cancelled
    if exhausted and entry.cancelled:
        unresolved_reason = "budget-exhausted"
    elif entry.trials >= maximum:
        unresolved_reason = "max-trials"
    else:
        unresolved_reason = "incomplete"
    reasons = []
    for comparison in comparisons:
        decision = decide(seen.get(comparison["id"], []), maximum=maximum)
        if decision.resolved_at is not None:
            reason = "resolved"
        elif unresolved_reason == "incomplete" and not entry.cancelled and decision.futility:
            reason = decision.futility
        else:
            reason = unresolved_reason
        reasons.append(reason)
        comparison["sequential"] = {
            "resolvedAtTrial": decision.resolved_at,
            "eValue": decision.e_value,
            "threshold": 1 / ALPHA,
            "stop": reason,
        }
        unresolved = decision.resolved_at is None
        comparison["differenceUnresolved"] = unresolved
        comparison["sampleSize"] = sample_size(comparison["transitions"]) if unresolved else None
    if not comparisons:
        stop = "no-comparisons"
    elif all(r == "resolved" for r in reasons):
        stop = "resolved"
    elif all(r in ("resolved", *FUTILITY_REASONS) for r in reasons):
        stop = "futility"
    else:
        stop = unresolved_reason
    return {"trialsUsed": used, "stop": stop}


def write_aggregate(
    runs_dir: Path,
    trials: list[Path],
    requested: int,
    budget: Mapping[str, Any] | None,
    *,
    adaptive: bool = False,
) -> Path:
    """Write aggregate.json over `trials` in a new id directory beside them."""
    return write_aggregate_record(
        runs_dir, lambda aid: aggregate(aid, trials, requested, budget, adaptive=adaptive)
    )


def _check_stats(row: CheckTally) -> AggregateCheck:
    observed = row["pass"] + row["fail"]
    interval = wilson_interval(row["pass"], observed)
    return {
        "id": row["id"],
        "variant": row["variant"],
        "kind": row["kind"],
        "pass": row["pass"],
        "fail": row["fail"],
        "unavailable": row["unavailable"],
        "passRate": row["pass"] / observed if observed else None,
        "interval": list(interval) if interval else None,
        "consistency": consistency(row["pass"], observed),
    }


def consistency(passes: int, observed: int) -> list[Consistency]:
    """pass@k and pass^k for k = 1 and k = n over the n trials whose check passed or failed."""
    if observed == 0:
        return []
    return [
        {
            "k": k,
            "passAtK": pass_at_k(observed, passes, k),
            "passHatK": pass_hat_k(observed, passes, k),
        }
        for k in sorted({1, observed})
    ]


def sample_size(transitions: Mapping[str, int]) -> SampleSize | None:
    """Paired trials in all, and how many more, for McNemar at 80% power and alpha 0.05.

    Connor's formula (see `stats.mcnemar_sample_size`) on the observed discordance rates,
    but never fewer pairs than are expected to hold the discordant pairs the exact test needs
    to reject at all (six at alpha 0.05): the normal approximation undercounts small samples.
    None when they cannot be separated (no pair, or as many fail-to-pass as pass-to-fail).
    """
    f2p, p2f = transitions.get("fail-to-pass", 0), transitions.get("pass-to-fail", 0)
    pairs = sum(transitions.get(name, 0) for name in TRANSITIONS if name != "unavailable")
    needed = mcnemar_sample_size(f2p, p2f, pairs)
    if needed is None:
        return None
    needed = max(needed, math.ceil(EXACT_MIN_DISCORDANT * pairs / (f2p + p2f)))
    return {"pairs": needed, "more": max(0, needed - pairs)}


def _comparison_stats(row: ComparisonTally, reused: Sequence[str] = ()) -> AggregateComparison:
    transitions = row["transitions"]
    f2p, p2f = transitions.get("fail-to-pass", 0), transitions.get("pass-to-fail", 0)
    p = mcnemar_exact(f2p, p2f)
    unpaired: Unpaired | None = None
    if reused:
        # A reused arm ran in another invocation: its runs pair with none of these, so the arms
        # are compared as independent samples, with the test `compare` uses (Fisher's exact).
        b, c = row["baseline"], row["candidate"]
        p = fisher_exact(b["pass"], b["pass"] + b["fail"], c["pass"], c["pass"] + c["fail"])
        unpaired = {
            "test": "fisher-exact",
            "p": p,
            "reused": list(reused),
            "why": f"the {' and '.join(reused)} arm was reused from another invocation, so "
            "its runs are not paired with this invocation's",
        }
    rates: dict[str, Rate] = {}
    for variant in VARIANTS:
        counts = row[variant]
        observed = counts["pass"] + counts["fail"]
        interval = wilson_interval(counts["pass"], observed)
        rates[variant] = {
            "passRate": counts["pass"] / observed if observed else None,
            "interval": list(interval) if interval else None,
        }
    separated = _separated(rates["baseline"].get("interval"), rates["candidate"].get("interval"))
    unresolved = not (separated and p < ALPHA)
    stats: AggregateComparison = {
        "id": row["id"],
        "kind": row["kind"],
        "baseline": recorded(row["baseline"]),
        "candidate": recorded(row["candidate"]),
        "transitions": transitions,
        "rates": rates,
        "discordant": {"fail-to-pass": f2p, "pass-to-fail": p2f},
        "mcnemarP": None if unpaired else p,
        "differenceUnresolved": unresolved,
        # Connor 1987 on the observed discordance; None when resolved or not estimable.
        "sampleSize": sample_size(transitions) if unresolved else None,
    }
    if unpaired:
        stats["unpaired"] = unpaired
    return stats


def _separated(a: list[float] | None, b: list[float] | None) -> bool:
    if a is None or b is None:
        return False
    return a[1] < b[0] or b[1] < a[0]


def verify_aggregate(
    aggregate_dir: Path, verify_trial: Callable[[Path], list[str]]
) -> tuple[list[Path], list[str]]:
    """The trial results an aggregate lists, and every difference found in it, one line each.

    Each trial is checked by `verify_trial` (its manifests and seal); the aggregate's own record
    is checked against what its trials give when aggregated again: `aggregate.json` is derived
    from them alone (its completion time apart), so an edited count or state shows here.
    """
    record = read.load_aggregate(aggregate_dir)
    record_path = layout.aggregate_file(aggregate_dir)
    trials = read.aggregate_trial_dirs(aggregate_dir)
    problems = [
        f"extra: {entry}" for entry in sorted(aggregate_dir.iterdir()) if entry != record_path
    ]
    missing = [trial for trial in trials if not trial.is_dir()]
    problems.extend(f"missing: trial result {trial}" for trial in missing)
    for trial in trials:
        if trial.is_dir():
            problems.extend(verify_trial(trial))
    if missing:
        return trials, problems
    again: Mapping[str, Any] = aggregate(
        str(record.get("id")),
        trials,
        int(record.get("requestedTrials") or len(trials)),
        record.get("budget"),
        adaptive="adaptive" in record,
    )
    changed = [
        key
        for key, value in record.items()
        if key != "completedAt" and json_key(again.get(key)) != json_key(value)
    ]
    if changed:
        problems.append(f"changed: {record_path} ({', '.join(changed)} not what its trials give)")
    return trials, problems
