"""One shard of a plan: which units it runs, where its evidence goes, and its shard record.

A shard is an ordinary pytest run (`--skill-eval-plan PLAN --skill-eval-shard K/N`, `-n M`
allowed). It deselects the units of other shards, writes complete write-once group directories
under the plan's result ids, and ends with `shard.json` instead of a summary (the summary is the
merge's to write, once every shard has arrived), then its seal, whose root CI prints.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..evidence import layout, read, utc_now, write_json_once
from ..evidence.shard_seal import write_shard_seal
from ..evidence.store import new_result_id
from .balance import assign
from .plan import Plan, Unit


def shard_units(plan: Plan, index: int, count: int) -> list[Unit]:
    """Shard K of N's units, in plan order (no unit is in two shards, every unit is in one):
    balanced by the plan's recorded durations, else round-robin (`balance.assign`)."""
    units = plan.units()
    return [unit for unit, shard in zip(units, assign(units, count), strict=True) if shard == index]


def create_shard_dir(runs: Path, plan: Plan, index: int, count: int) -> Path:
    """A fresh directory for this run of shard K, with one result directory per planned trial."""
    path = layout.shard_dir(runs, plan.id, index, count, new_result_id())
    path.mkdir(parents=True)
    for trial in range(1, plan.trials + 1):
        (path / plan.result_id(trial)).mkdir()
    return path


def write_shard_record(
    shard: Path,
    plan: Plan,
    index: int,
    count: int,
    started_at: str,
    budget: Mapping[str, Any] | None,
    ledger: str | None = None,
) -> dict[str, Any]:
    """`shard.json`: which plan and shard this is, what each unit ended as, spend, timing.

    `ledger` is the Redis ledger the shard charged, its URL without password (its budget is then the
    whole run's, shared with the other shards), else None (its own share of the ceiling).
    """
    units = []
    for unit in shard_units(plan, index, count):
        for host in unit.hosts:
            group_dir = layout.group_dir(shard / plan.result_id(unit.trial), unit.group, host)
            record = read.group_record(group_dir) if group_dir.is_dir() else None
            state = record["state"] if record else None
            units.append({"group": unit.group, "host": host, "trial": unit.trial, "state": state})
    shard_record: dict[str, Any] = {
        "schema_version": 1,
        "kind": "shard",
        "plan": plan.id,
        "planSha256": plan.sha256,
        "shard": {"index": index, "count": count},
        "host": socket.gethostname(),
        "results": {str(t): plan.result_id(t) for t in range(1, plan.trials + 1)},
        "units": units,
        "budget": dict(budget) if budget is not None else None,
        "ledger": ledger,
        "startedAt": started_at,
        "completedAt": utc_now(),
    }
    write_json_once(layout.shard_file(shard), shard_record)
    return shard_record


def seal_shard(shard: Path, plan: Plan) -> str:
    """Seal a finished shard (`shard-seal.json`, after `shard.json`); returns its root (hex).

    The root covers `shard.json` and every group manifest the shard wrote: CI prints it, and
    `skill-eval merge --shard-root K=sha256:<root>` refuses any shard that is not this one.
    """
    return write_shard_seal(shard, [plan.result_id(t) for t in range(1, plan.trials + 1)])


def unit_keys(units: Sequence[Unit]) -> set[tuple[str, int]]:
    """(group id, trial) of each unit."""
    return {(unit.group, unit.trial) for unit in units}
