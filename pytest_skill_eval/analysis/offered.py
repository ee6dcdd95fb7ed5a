"""How a description variant's target was offered, counted over runs: per state of
`offered-skills.json` (`intact`, `cut`, `absent`, `altered`, `unobservable`), the runs that saw
it so. The aggregate records it per group (and in its cross-host table), the trigger rates per
variant, so that a rate or a decision over trials says when the target was not offered intact.

Read from each run's `activation.offered`, the target's state the run recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from ..evidence import read
from ..evidence.aggregates import AggregateGroup, TargetOffered
from ..evidence.skill_records import OfferedState

STATES: tuple[OfferedState, ...] = get_args(OfferedState)
# The states in which the model saw the whole description, or nothing could be seen.
KNOWN_INTACT: tuple[OfferedState, ...] = ("intact", "unobservable")


def offered_state(run: Mapping[str, Any]) -> tuple[str, OfferedState] | None:
    """A description run's target name and how the host offered it; None: no target, or no
    record of it."""
    activation = read.mapping(run.get("activation"))
    target = read.mapping(activation.get("target"))
    state = activation.get("offered")
    if run.get("evaluationType") != "description" or "name" not in target:
        return None
    for known in STATES:
        if state == known:
            return str(target["name"]), known
    return None


def count_run(counts: dict[OfferedState, int], run: Mapping[str, Any] | None) -> None:
    """Add a run's offered target state to `counts` (nothing when it has none)."""
    found = None if run is None else offered_state(run)
    if found is not None:
        for state in STATES:
            counts.setdefault(state, 0)
        counts[found[1]] += 1


def record(row: AggregateGroup, counted: Mapping[str, TargetOffered] | None) -> None:
    """Set an aggregate group's `offered` from what `count_group` counted; left out when no
    trial recorded a target's state, so an aggregate of older runs is derived as it was."""
    if counted:
        row["offered"] = list(counted.values())


def count_group(counted: dict[str, TargetOffered], group_dir: Path, variants: Any) -> None:
    """Add one trial's runs of a group to `counted`, keyed by variant."""
    for variant in variants or ():
        found = read.read_run(group_dir / variant)
        offered = None if found is None else offered_state(found[1])
        if offered is None:
            continue
        entry = counted.setdefault(
            variant,
            {"variant": variant, "target": offered[0], "trials": dict.fromkeys(STATES, 0)},
        )
        entry["trials"][offered[1]] += 1


def not_intact(counts: Mapping[str, int]) -> dict[str, int]:
    """The counts of the states other than intact or unobservable that some run saw."""
    return {s: n for s, n in counts.items() if n and s not in KNOWN_INTACT}


def cross_host_cells(
    group: AggregateGroup,
) -> list[tuple[tuple[str, str], dict[str, int | None]]]:
    """An aggregate group's `offered` rows of the cross-host table: each row's kind and id
    (`candidate-target NAME`), and the trials per state on this group's host."""
    return [
        (
            ("offered", f"{target['variant']}-target {target['target']}"),
            {str(state): count for state, count in target["trials"].items()},
        )
        for target in group.get("offered") or []
    ]
