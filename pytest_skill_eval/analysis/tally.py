"""Each group's grades counted over the trials an aggregate reads: what `trials.py` turns into
statistics, one tally per group and host."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from ..definitions import VARIANTS
from ..evidence import layout, read
from ..evidence.aggregates import Counts, TargetOffered
from ..evidence.iteration import retries_in
from ..evidence.records import GradeRecord
from . import offered

TRANSITIONS = ("pass-to-pass", "pass-to-fail", "fail-to-pass", "fail-to-fail", "unavailable")

# Trials a check or arm passed, failed or could not say ("pass" is a keyword: the functional
# form).
Counted = TypedDict("Counted", {"pass": int, "fail": int, "unavailable": int})


class CheckTally(Counted):
    """A check of the group, with its counts so far."""

    id: str
    variant: NotRequired[str]
    kind: NotRequired[str]


class ComparisonTally(TypedDict):
    """A comparison of the group: each arm's counts and each transition's, so far."""

    id: str
    kind: NotRequired[str]
    baseline: Counted
    candidate: Counted
    transitions: dict[str, int]


def _counts() -> Counted:
    return {"pass": 0, "fail": 0, "unavailable": 0}


def recorded(counts: Counted) -> Counts:
    """Counts as the aggregate records them."""
    return {"pass": counts["pass"], "fail": counts["fail"], "unavailable": counts["unavailable"]}


def _count(counts: Counted, state: str) -> None:
    """One more trial in `state`'s count (a state that is none of the three counts nowhere)."""
    if state == "pass":
        counts["pass"] += 1
    elif state == "fail":
        counts["fail"] += 1
    elif state == "unavailable":
        counts["unavailable"] += 1


@dataclass
class GroupTally:
    """One group on one host over the trials: how many ran and were cancelled, each check and
    comparison counted, each comparison's transition trial by trial (for the sequential
    test), the results it ran in, its reused arms and its retries."""

    id: str
    host: str
    trials: int = 0
    cancelled: int = 0
    sequences: dict[str, list[str | None]] = field(default_factory=dict)
    checks: dict[str, CheckTally] = field(default_factory=dict)
    comparisons: dict[str, ComparisonTally] = field(default_factory=dict)
    results: list[Path] = field(default_factory=list)
    reused: set[str] = field(default_factory=set)
    retries: int = 0
    offered: dict[str, TargetOffered] = field(default_factory=dict)  # by variant

    def count_grade(self, grade: GradeRecord, index: int, count: int) -> None:
        """Count one trial's grade (trial `index` of `count`)."""
        for check in grade.get("checks", []):
            row = self.checks.setdefault(
                check["id"],
                {
                    "id": check["id"],
                    "variant": check["variant"],
                    "kind": check["kind"],
                    "pass": 0,
                    "fail": 0,
                    "unavailable": 0,
                },
            )
            _count(row, check["state"])
        for comparison in grade.get("comparisons", []):
            tally = self.comparisons.setdefault(
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
                _count(tally[variant], comparison[variant]["state"])
            transition = comparison["transition"]
            tally["transitions"][transition] = tally["transitions"].get(transition, 0) + 1
            # Trial by trial, for the sequential test: read here, never again.
            sequence = self.sequences.setdefault(comparison["id"], [None] * count)
            sequence[index] = transition


def count_group(
    groups: dict[str, GroupTally],
    group: Mapping[str, Any],
    result_dir: Path,
    index: int,
    trials: int,
) -> None:
    """Add one trial's record of a group to its tally (made on first sight) in `groups`."""
    host = layout.record_host(group)
    tally = groups.setdefault(
        layout.group_dir_name(group["id"], host), GroupTally(group["id"], host)
    )
    tally.results.append(result_dir)
    tally.trials += 1
    tally.cancelled += group["state"] == "cancelled"
    record_dir = layout.record_dir(result_dir, group)
    tally.reused.update(reused_arms(record_dir))
    retried = retries_in(record_dir, group)
    if retried:  # --skill-eval-retries: attempts beyond each run's first, when any
        tally.retries += retried
    offered.count_group(tally.offered, record_dir, group.get("variants"))
    grade = read.read_grade(record_dir, group)
    if grade is not None:
        tally.count_grade(grade, index, trials)


def reused_arms(group_dir: Path) -> set[str]:
    """The variants of a group run copied from another invocation (`--skill-eval-reuse`)."""
    found = {v: read.read_run(group_dir / v) for v in VARIANTS}
    return {v for v, run in found.items() if run is not None and "reused" in run[1]}
