"""Which shard runs which unit: balanced by durations earlier results recorded, else round-robin.

The assignment is a pure function of the plan, so every shard and the merge compute the same
one. Durations are pinned in the plan when it is made (`seconds` per unit), never read later.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from ..definitions import VARIANTS
from ..evidence import layout, read
from .plan import Unit


def recorded_durations(runs: Path) -> dict[str, float]:
    """Seconds each group's variants took in the newest finished result under `runs` that ran it.

    Result ids sort by time, so a later result overrides an earlier one. Runs without both
    timestamps (cancelled, never started) say nothing about a group's cost and are skipped.
    """
    found: dict[str, float] = {}
    if not runs.is_dir():
        return found
    for result in sorted(p for p in runs.iterdir() if p.is_dir() and read.is_finished(p)):
        groups = layout.groups_dir(result)
        for group_dir in sorted(groups.iterdir()) if groups.is_dir() else ():
            seconds = 0.0
            for variant in VARIANTS:
                run = read.read_run(group_dir / variant)
                took = _seconds(run[1].get("startedAt"), run[1].get("completedAt")) if run else None
                seconds += took or 0.0
            if seconds > 0:
                found[group_dir.name] = seconds
    return found


def _seconds(started: object, completed: object) -> float | None:
    if not isinstance(started, str) or not isinstance(completed, str):
        return None
    try:
        took = datetime.fromisoformat(completed) - datetime.fromisoformat(started)
    except ValueError:
        return None
    return max(took.total_seconds(), 0.0)


def assign(units: Sequence[Unit], count: int) -> list[int]:
    """The shard (1..count) of each unit, in plan order.

    Without any recorded duration: round-robin (unit i goes to shard i mod N + 1), so groups and
    trials mix. With durations: longest first onto the least-loaded shard (ties to the lower
    shard, equal durations in plan order); a unit never timed counts as the mean of those timed.
    """
    timed = [u.seconds for u in units if u.seconds is not None]
    if not timed:
        return [i % count + 1 for i in range(len(units))]
    mean = sum(timed) / len(timed)
    cost = [u.seconds if u.seconds is not None else mean for u in units]
    load = [0.0] * count
    shards = [0] * len(units)
    for i in sorted(range(len(units)), key=lambda i: (-cost[i], i)):
        lightest = min(range(count), key=lambda k: (load[k], k))
        load[lightest] += cost[i]
        shards[i] = lightest + 1
    return shards
