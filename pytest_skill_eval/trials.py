"""Aggregates over trials: counts, Wilson intervals, exact McNemar tests. Facts, not verdicts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from .definitions import VARIANTS
from .evidence import layout, read
from .evidence.records import AggregateGroup, AggregateRecord, Budget, Fingerprint, TrialRow
from .evidence.states import aggregate_state
from .evidence.store import utc_now
from .evidence.summary import write_aggregate as write_aggregate_record

Z95 = 1.959963984540054
ALPHA = 0.05
TRANSITIONS = ("pass-to-pass", "pass-to-fail", "fail-to-pass", "fail-to-fail", "unavailable")


def wilson_interval(passes: int, total: int, z: float = Z95) -> tuple[float, float] | None:
    """95% Wilson score interval of a pass rate; None without observations."""
    if total == 0:
        return None
    p = passes / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(fail_to_pass: int, pass_to_fail: int) -> float:
    """Exact two-sided McNemar p-value: a binomial(n, 1/2) test on the discordant pairs."""
    n = fail_to_pass + pass_to_fail
    if n == 0:
        return 1.0
    k = min(fail_to_pass, pass_to_fail)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return float(min(1.0, 2 * tail))


def _counts() -> dict[str, int]:
    return {"pass": 0, "fail": 0, "unavailable": 0}


def aggregate(
    aggregate_id: str,
    trials: Sequence[Path],
    requested: int,
    budget: Mapping[str, Any] | None = None,
) -> AggregateRecord:
    """The aggregate.json content for completed trial results (reference §6.5 plus statistics)."""
    trial_rows: list[TrialRow] = []
    groups: dict[str, dict[str, Any]] = {}
    fingerprints: list[Fingerprint] = []
    for result_dir in trials:
        summary = read.summary_or_none(result_dir)
        trial_rows.append(
            {"id": result_dir.name, "state": summary["state"] if summary else "cancelled"}
        )
        invocation = read.load_invocation(result_dir)
        if invocation is not None:
            fingerprints.append(
                {"definitions": invocation.get("definitions"), "pins": invocation.get("pins")}
            )
        for group in summary["groups"] if summary else []:
            entry = groups.setdefault(
                group["id"], {"id": group["id"], "trials": 0, "checks": {}, "comparisons": {}}
            )
            entry["trials"] += 1
            grade = read.read_grade(layout.group_dir(result_dir, group["id"]), group)
            if grade is None:
                continue
            for check in grade.get("checks", []):
                row = entry["checks"].setdefault(
                    check["id"],
                    {"id": check["id"], "variant": check["variant"], "kind": check["kind"]}
                    | _counts(),
                )
                if check["state"] in ("pass", "fail", "unavailable"):
                    row[check["state"]] += 1
            for comparison in grade.get("comparisons", []):
                row = entry["comparisons"].setdefault(
                    comparison["id"],
                    {
                        "id": comparison["id"],
                        "kind": comparison["kind"],
                        "baseline": _counts(),
                        "candidate": _counts(),
                        "transitions": dict.fromkeys(TRANSITIONS, 0),
                    },
                )
                for variant in VARIANTS:
                    state = comparison[variant]["state"]
                    if state in ("pass", "fail", "unavailable"):
                        row[variant][state] += 1
                row["transitions"][comparison["transition"]] = (
                    row["transitions"].get(comparison["transition"], 0) + 1
                )
    out_groups: list[AggregateGroup] = []
    for entry in groups.values():
        checks = [_check_stats(row) for row in entry["checks"].values()]
        comparisons = [_comparison_stats(row) for row in entry["comparisons"].values()]
        out_groups.append(
            {
                "id": entry["id"],
                "trials": entry["trials"],
                "comparisons": comparisons,
                "checks": checks,
            }
        )
    identical = all(f == fingerprints[0] for f in fingerprints) if fingerprints else True
    result: AggregateRecord = {
        "schema_version": 1,
        "kind": "aggregate",
        "id": aggregate_id,
        "state": aggregate_state((row["state"] for row in trial_rows), requested),
        "requestedTrials": requested,
        "trials": trial_rows,
        "inputs": {"identical": identical, "fingerprints": fingerprints[:1]},
        "groups": out_groups,
        "completedAt": utc_now(),
    }
    if budget is not None:
        result["budget"] = cast(Budget, dict(budget))
    return result


def write_aggregate(
    runs_dir: Path, trials: list[Path], requested: int, budget: Mapping[str, Any] | None
) -> Path:
    """Write aggregate.json over `trials` in a new id directory beside them."""
    return write_aggregate_record(runs_dir, lambda aid: aggregate(aid, trials, requested, budget))


def _check_stats(row: dict[str, Any]) -> dict[str, Any]:
    observed = row["pass"] + row["fail"]
    interval = wilson_interval(row["pass"], observed)
    return {
        **row,
        "passRate": row["pass"] / observed if observed else None,
        "interval": list(interval) if interval else None,
    }


def _comparison_stats(row: dict[str, Any]) -> dict[str, Any]:
    transitions = row["transitions"]
    f2p, p2f = transitions.get("fail-to-pass", 0), transitions.get("pass-to-fail", 0)
    p = mcnemar_exact(f2p, p2f)
    rates = {}
    for variant in VARIANTS:
        counts = row[variant]
        observed = counts["pass"] + counts["fail"]
        interval = wilson_interval(counts["pass"], observed)
        rates[variant] = {
            "passRate": counts["pass"] / observed if observed else None,
            "interval": list(interval) if interval else None,
        }
    separated = _separated(rates["baseline"]["interval"], rates["candidate"]["interval"])
    return {
        **row,
        "rates": rates,
        "discordant": {"fail-to-pass": f2p, "pass-to-fail": p2f},
        "mcnemarP": p,
        "differenceUnresolved": not (separated and p < ALPHA),
    }


def _separated(a: list[float] | None, b: list[float] | None) -> bool:
    if a is None or b is None:
        return False
    return a[1] < b[0] or b[1] < a[0]
