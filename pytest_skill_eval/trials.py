"""Aggregates over trials: counts, Wilson intervals, exact McNemar tests. Facts, not verdicts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .definitions import VARIANTS
from .evidence import read_json, utc_now

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


def _grade(result_dir: Path, group: Mapping[str, Any]) -> dict[str, Any] | None:
    name = (group.get("artifacts") or {}).get("grade")
    path = result_dir / "groups" / group["id"] / str(name)
    if not name or not path.is_file():
        return None
    grade: dict[str, Any] = read_json(path)
    return grade


def aggregate(
    aggregate_id: str,
    trials: Sequence[Path],
    requested: int,
    budget: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The aggregate.json content for completed trial results (reference §6.5 plus statistics)."""
    trial_rows = []
    groups: dict[str, dict[str, Any]] = {}
    fingerprints = []
    for result_dir in trials:
        summary_path = result_dir / "summary.json"
        summary: dict[str, Any] = (
            read_json(summary_path) if summary_path.is_file() else {"state": "cancelled"}
        )
        trial_rows.append({"id": result_dir.name, "state": summary["state"]})
        invocation_path = result_dir / "invocation.json"
        if invocation_path.is_file():
            invocation = read_json(invocation_path)
            fingerprints.append(
                {"definitions": invocation.get("definitions"), "pins": invocation.get("pins")}
            )
        for group in summary.get("groups", []):
            entry = groups.setdefault(
                group["id"], {"id": group["id"], "trials": 0, "checks": {}, "comparisons": {}}
            )
            entry["trials"] += 1
            grade = _grade(result_dir, group)
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
    out_groups = []
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
    states = [row["state"] for row in trial_rows]
    if len(trial_rows) < requested or "cancelled" in states:
        state = "cancelled"
    elif all(s == "complete" for s in states):
        state = "complete"
    else:
        state = "partially-complete"
    identical = all(f == fingerprints[0] for f in fingerprints) if fingerprints else True
    result: dict[str, Any] = {
        "schema_version": 1,
        "kind": "aggregate",
        "id": aggregate_id,
        "state": state,
        "requestedTrials": requested,
        "trials": trial_rows,
        "inputs": {"identical": identical, "fingerprints": fingerprints[:1]},
        "groups": out_groups,
        "completedAt": utc_now(),
    }
    if budget is not None:
        result["budget"] = dict(budget)
    return result


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
