"""The bottom line of a result or an aggregate: per group, did the skill help, hurt, or can we
not tell yet.

One function, `bottom_line`, says it for every place that shows it (the terminal summary, the
text view and `skill-eval summary`), so each reader sees the same words for the same evidence.
A single result counts its comparisons' transitions; an aggregate states the statistical
decision it recorded (McNemar at alpha 0.05, or the sequential test under adaptive trials) and,
when unresolved, the sample-size estimate beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..analysis.sequential import FUTILITY_REASONS
from ..analysis.stats import ALPHA
from ..common.wording import counted
from ..evidence import layout, read
from .offered import aggregate_caveat, caveat
from .present import format_number, mapping, p_value_text
from .statistics import sample_size_of


class Decided(Protocol):
    """The significance gate's decision as each view shows it, leading the bottom line
    (`analysis.gate_decision.GateDecision`)."""

    @property
    def passed(self) -> bool: ...
    def headline(self) -> str: ...
    def lines(self) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class BottomLine:
    """One group's decision: its label (`id` or `id@host`) and the sentence about it."""

    group: str
    text: str

    def __str__(self) -> str:
        return f"{self.group}: {self.text}"


def bottom_line(target: Path) -> list[BottomLine]:
    """Per group of a result or aggregate directory, the decision in words a reader acts on."""
    if read.is_aggregate(target):
        data = read.load_aggregate(target)
        return [
            BottomLine(
                _label(group),
                aggregate_text(group, data.get("trials") or []) + aggregate_caveat(group),
            )
            for group in data.get("groups") or []
            if isinstance(group, Mapping)
        ]
    lines = []
    for record in read.group_records(target):
        group_dir = layout.record_dir(target, record)
        grade = read.read_grade(group_dir, record)
        told = caveat(group_dir, record.get("variants") or {})
        lines.append(BottomLine(_label(record), result_text(record, grade) + told))
    return lines


def result_text(record: Mapping[str, Any], grade: Mapping[str, Any] | None) -> str:
    """A single result's group: how many comparisons changed for the better and the worse."""
    if record.get("state") != "complete" or grade is None:
        return f"no decision: the group is {record.get('state')}; see its evidence"
    if grade.get("errors"):
        return f"no decision: {counted(len(grade['errors']), 'grade error')}; see the view"
    comparisons = [c for c in grade.get("comparisons") or [] if isinstance(c, Mapping)]
    if not comparisons:
        checks = [c for c in grade.get("checks") or [] if isinstance(c, Mapping)]
        passed = sum(1 for c in checks if c.get("state") == "pass")
        return f"no comparison to decide on; {passed} of {len(checks)} checks passed"
    seen = [str(c.get("transition")) for c in comparisons]
    better, worse = seen.count("fail-to-pass"), seen.count("pass-to-fail")
    total = len(comparisons)
    unavailable = seen.count("unavailable")
    if not better and not worse:
        text = f"the skill changed none of {counted(total, 'comparison')}"
    else:
        text = (
            f"the skill changed {_some(better)} of {total} "
            f"{'comparison' if total == 1 else 'comparisons'} for the better (fail-to-pass), "
            f"{_some(worse)} for the worse (pass-to-fail)"
        )
    if unavailable:
        text += f"; {unavailable} could not be decided (unavailable)"
    return text


def aggregate_text(group: Mapping[str, Any], trials: Sequence[Any]) -> str:
    """An aggregate's group: per comparison, its direction when resolved, else what is missing."""
    comparisons = [c for c in group.get("comparisons") or [] if isinstance(c, Mapping)]
    if not comparisons:
        return "no comparison to decide on"
    adaptive = mapping(group.get("adaptive"))
    used = adaptive.get("trialsUsed") or group.get("trials") or len(trials)
    return "; ".join(f"{c.get('id')} {_comparison_text(c, int(used or 0))}" for c in comparisons)


def _comparison_text(comparison: Mapping[str, Any], trials: int) -> str:
    discordant = mapping(comparison.get("discordant"))
    better = int(discordant.get("fail-to-pass") or 0)
    worse = int(discordant.get("pass-to-fail") or 0)
    sequential = mapping(comparison.get("sequential"))
    if not comparison.get("differenceUnresolved"):
        direction = "better" if better > worse else "worse"
        at = sequential.get("resolvedAtTrial")
        how = f"resolved at trial {at}" if at is not None else p_value_text(comparison)
        return f"{direction} with the skill at alpha {format_number(ALPHA)} ({how})"
    size = sample_size_of(comparison)
    if size is None:
        more = "no difference observed to size more trials on"
    else:
        more = f"about {size['more']} more paired trials would be needed"
    if sequential.get("stop") in FUTILITY_REASONS:
        return (
            f"not resolved, stopped for futility after {counted(trials, 'trial')} "
            f"({better} fail-to-pass, {worse} pass-to-fail): more trials would not resolve it"
        )
    return (
        f"not resolved after {counted(trials, 'trial')} "
        f"({better} fail-to-pass, {worse} pass-to-fail); {more}"
    )


def _some(count: int) -> str:
    return str(count) if count else "none"


def _label(record: Mapping[str, Any]) -> str:
    return layout.group_dir_name(str(record.get("id")), layout.record_host(record))
