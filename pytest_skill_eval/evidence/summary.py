"""Result-level records: `invocation.json` first, `summary.json` and its seal last, aggregates."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from . import layout
from .aggregates import AggregateRecord
from .read import group_records
from .records import (
    Budget,
    InvocationDefinition,
    InvocationRecord,
    SummaryRecord,
)
from .seal import write_seal
from .states import batch_state
from .store import EvidenceError, create_result_dir, utc_now, write_json_once

if TYPE_CHECKING:
    from ..definitions import LoadedDefinition


def invocation_definitions(definitions: Sequence[LoadedDefinition]) -> list[InvocationDefinition]:
    """The invocation record's entry for each loaded definition file and its groups."""
    return [
        {
            "path": str(d.path),
            "kind": d.kind,
            "id": d.id,
            "groups": [
                {"id": g.group.id, "position": g.position, "path": str(g.path), "sha256": g.sha256}
                for g in d.groups
            ],
        }
        for d in definitions
    ]


def write_invocation(result_dir: Path, invocation: InvocationRecord) -> str:
    """Record what a result is run from, before any group starts; returns its sha256."""
    return write_json_once(layout.invocation_file(result_dir), invocation)


def discard_unused_result(result_dir: Path) -> bool:
    """Remove a result that holds nothing but its invocation record (no group ever started in
    it: adaptive trials stopped first); True when removed. Anything else in it is kept."""
    invocation = layout.invocation_file(result_dir)
    try:
        entries = list(result_dir.iterdir())
    except OSError:
        return False
    if [entry.name for entry in entries] != [invocation.name] or not invocation.is_file():
        return False
    invocation.unlink()
    result_dir.rmdir()
    return True


def discard_unused_results(result_dirs: dict[int, Path], runs_dir: Path) -> None:
    """Remove the results of an invocation that ran nothing (each holds only its invocation
    record), then `runs_dir` and its parent when that leaves them empty: a run that collected
    nothing writes nothing. A result holding anything else is kept, and stays listed."""
    for trial in [t for t, path in result_dirs.items() if discard_unused_result(path)]:
        del result_dirs[trial]
    for directory in (runs_dir, runs_dir.parent):
        try:
            directory.rmdir()  # only when empty; another invocation's results stay
        except OSError:
            return


def write_summary(
    result_dir: Path,
    trial: int,
    budget: Mapping[str, Any] | None = None,
    completed_at: str | None = None,
    shards: Sequence[Mapping[str, Any]] | None = None,
) -> SummaryRecord | None:
    """Write summary.json for a result, once; None when it already exists.

    `completed_at` defaults to now; a merge passes the time its shards completed and the
    roots of the shards it merged (`shards`, recorded in the seal).
    """
    summary = summary_record(result_dir, trial, budget, completed_at or utc_now())
    try:
        write_json_once(layout.summary_file(result_dir), summary)
    except EvidenceError:
        return None
    write_seal(result_dir, shards)  # last: the seal covers the summary
    return summary


def summary_record(
    result_dir: Path, trial: int, budget: Mapping[str, Any] | None, completed_at: str
) -> SummaryRecord:
    """What `summary.json` of a result says, from its group records as they are now."""
    records = group_records(result_dir)
    summary: SummaryRecord = {
        "schema_version": 1,
        "id": result_dir.name,
        "trial": trial,
        "state": batch_state(r["state"] for r in records) if records else "cancelled",
        "groups": records,
        "completedAt": completed_at,
    }
    if budget is not None:
        summary["budget"] = cast(Budget, dict(budget))
    return summary


def write_aggregate(runs_dir: Path, build: Callable[[str], AggregateRecord]) -> Path:
    """Write `build(id)` as aggregate.json in a new id directory beside the trial results."""
    aggregate_id, path = create_result_dir(runs_dir)
    write_json_once(layout.aggregate_file(path), build(aggregate_id))
    return path
