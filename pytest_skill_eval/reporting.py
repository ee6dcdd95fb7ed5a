"""Summaries of results: summary.json (written once, last) and the terminal section."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from .definitions import VARIANTS
from .evidence import (
    EvidenceError,
    batch_state,
    create_result_dir,
    read_json,
    utc_now,
    write_json_once,
)
from .execution import read_group_record
from .trials import aggregate
from .views.text import escape_cell


class _Writer(Protocol):
    def write_sep(self, sep: str, title: str | None = None, **markup: bool) -> None: ...
    def write_line(self, line: str | bytes, **markup: bool) -> None: ...


def describe(kind: str, data: Mapping[str, Any]) -> str:
    """One-paragraph text for a check or comparison sub-result."""
    if kind == "comparison":
        return (
            f"comparison {data['id']} ({data['kind']}): {data['transition']} "
            f"(baseline {data['baseline']['check']}={data['baseline']['state']}, "
            f"candidate {data['candidate']['check']}={data['candidate']['state']})"
        )
    return (
        f"check {data['id']} ({data['kind']}, {data['variant']}): {data['state']}\n"
        f"expected: {_compact(data.get('expected'))}\n"
        f"observed: {_compact(data.get('observed'))}"
    )


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def group_records(result_dir: Path) -> list[dict[str, Any]]:
    """Finalised group records of a result, in suite order."""
    groups_dir = result_dir / "groups"
    records = []
    if groups_dir.is_dir():
        for group_dir in sorted(groups_dir.iterdir()):
            record = read_group_record(group_dir)
            if record is None:
                record = {
                    "id": group_dir.name,
                    "position": None,
                    "state": "cancelled",
                    "variants": {},
                    "grade": None,
                    "errors": [{"kind": "cancellation", "message": "the group never finished"}],
                }
            records.append(record)
    return sorted(records, key=lambda r: (r.get("position") or 0, r["id"]))


def write_summary(
    result_dir: Path, trial: int, budget: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """Write summary.json for a result, once; None when it already exists."""
    records = group_records(result_dir)
    summary = {
        "schema_version": 1,
        "id": result_dir.name,
        "trial": trial,
        "state": batch_state(r["state"] for r in records) if records else "cancelled",
        "groups": records,
        "completedAt": utc_now(),
    }
    if budget is not None:
        summary["budget"] = dict(budget)
    try:
        write_json_once(result_dir / "summary.json", summary)
    except EvidenceError:
        return None
    return summary


def write_aggregate(
    runs_dir: Path, trials: list[Path], requested: int, budget: Mapping[str, Any] | None
) -> Path:
    """Write aggregate.json in a new id directory beside the trial results."""
    aggregate_id, path = create_result_dir(runs_dir)
    write_json_once(path / "aggregate.json", aggregate(aggregate_id, trials, requested, budget))
    return path


def _cost(run: Mapping[str, Any]) -> float | None:
    usage = run.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("cost"), dict):
        total = usage["cost"].get("total")
        if isinstance(total, int | float):
            return float(total)
    return None


def terminal_summary(
    writer: _Writer, result_dirs: Mapping[int, Path], aggregate_dir: Path | None = None
) -> None:
    """The `skill-eval` section: per group states, checks, transitions, cost and evidence path."""
    if not result_dirs:
        return
    writer.write_sep("=", "skill-eval")
    for trial, result_dir in sorted(result_dirs.items()):
        summary_path = result_dir / "summary.json"
        summary: dict[str, Any] = (
            read_json(summary_path) if summary_path.is_file() else {"state": "unknown"}
        )
        writer.write_line(
            f"result {result_dir.name} [{summary['state']}] trial {trial}: {result_dir}"
        )
        budget = summary.get("budget")
        if budget:
            exhausted = " - budget exhausted" if budget["exhausted"] else ""
            writer.write_line(
                f"  budget: spent {budget['spent']} of {budget['maxCost']} USD{exhausted}"
            )
        for record in group_records(result_dir):
            group_dir = result_dir / "groups" / record["id"]
            variants = " ".join(f"{v}={s}" for v, s in record.get("variants", {}).items())
            costs = []
            for variant in VARIANTS:
                run_path = group_dir / variant / "run.json"
                if run_path.is_file():
                    cost = _cost(read_json(run_path))
                    if cost is not None:
                        costs.append(cost)
            cost_text = f" cost=${sum(costs):.6f}" if costs else ""
            writer.write_line(
                f"  group {record['id']} [{record['state']}] {variants} "
                f"grade={record.get('grade')}{cost_text}"
            )
            grade_file = (record.get("artifacts") or {}).get("grade")
            if grade_file and (group_dir / grade_file).is_file():
                grade = read_json(group_dir / grade_file)
                for check in grade.get("checks", []):
                    writer.write_line(
                        f"    check {check['id']} {check['variant']} {check['kind']}: "
                        f"{check['state']}"
                    )
                for comparison in grade.get("comparisons", []):
                    writer.write_line(
                        f"    comparison {comparison['id']}: {comparison['transition']}"
                    )
                for error in grade.get("errors", []):
                    # Reasons can quote file names; keep each one on its own line.
                    reason = escape_cell(str(error.get("reason")))
                    writer.write_line(f"    grade-error {error.get('id') or 'system'}: {reason}")
            writer.write_line(f"    evidence: {group_dir}")
    if aggregate_dir is not None:
        data = read_json(aggregate_dir / "aggregate.json")
        writer.write_line(
            f"aggregate {data['id']} [{data['state']}] trials="
            f"{len(data['trials'])}/{data['requestedTrials']}: {aggregate_dir}"
        )
        for group in data["groups"]:
            for check in group["checks"]:
                interval = check.get("interval")
                span = f" 95% CI [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""
                writer.write_line(
                    f"  {group['id']} check {check['id']}: pass {check['pass']}/"
                    f"{check['pass'] + check['fail'] + check['unavailable']}{span}"
                )
            for comparison in group["comparisons"]:
                verdict = (
                    "difference unresolved"
                    if comparison["differenceUnresolved"]
                    else "difference resolved"
                )
                writer.write_line(
                    f"  {group['id']} comparison {comparison['id']}: "
                    f"fail-to-pass={comparison['discordant']['fail-to-pass']} "
                    f"pass-to-fail={comparison['discordant']['pass-to-fail']} "
                    f"McNemar p={comparison['mcnemarP']:.4g} ({verdict})"
                )
