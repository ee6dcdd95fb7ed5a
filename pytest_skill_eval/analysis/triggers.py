"""Trigger rates per target skill: does a description fire when it should and stay quiet otherwise.

A run counts toward a target skill's **activation rate** when one of its `skill-read` checks
expects the target to be read (`on-turn`, `by-turn`, `not-before-turn`), and toward its
**false activation rate** when one expects `never`; the numerator is the observed fact
`targetRead`, not the check's pass. Runs that ended `invalid`, `infrastructure-failed` or
`cancelled` never reach a denominator: a crashed subject is not a skill that stayed quiet.
They are counted beside the rate instead, as are complete runs whose read was not observable.

The target is identified by its snapshot (declared path and content sha256 from `run.json`),
keyed by the candidate's target, the skill under evaluation. Rates are computed from the
evidence at read time, so a single result needs no extra record and an aggregate stores them.
Beside its rates, each variant counts its runs by how the host offered the target
(`offered.py`), so that a rate over runs whose target was cut or never listed says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..definitions import VARIANTS
from ..evidence import read
from ..evidence.aggregates import (
    TriggerCounts,
    TriggerDifference,
    TriggerRate,
    TriggerSkill,
    TriggerVariant,
)
from ..evidence.skill_records import OfferedState
from ..evidence.states import FAILING_RUN_STATES
from .offered import count_run
from .stats import newcombe_difference, wilson_interval

POSITIVE = frozenset({"on-turn", "by-turn", "not-before-turn"})
NEGATIVE = frozenset({"never"})
EXCLUDED = ("invalid", "infrastructure-failed", "cancelled")
RATES = ("activation", "falseActivation")


@dataclass
class _Tally:
    read: int = 0
    observed: int = 0
    unobserved: int = 0
    excluded: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EXCLUDED, 0))

    def record(self, state: str, target_read: bool | None) -> None:
        if state in FAILING_RUN_STATES:
            self.excluded[state] += 1
        elif state != "complete" or target_read is None:
            self.unobserved += 1
        else:
            self.observed += 1
            self.read += int(target_read)

    def counts(self) -> TriggerCounts:
        interval = wilson_interval(self.read, self.observed)
        return {
            "read": self.read,
            "observed": self.observed,
            "rate": self.read / self.observed if self.observed else None,
            "interval": list(interval) if interval else None,
            "excluded": dict(self.excluded),
            "unobserved": self.unobserved,
        }


@dataclass
class _Skill:
    skill: TriggerSkill
    groups: set[str] = field(default_factory=set)
    targets: dict[str, list[TriggerSkill | None]] = field(default_factory=dict)
    tallies: dict[tuple[str, str], _Tally] = field(default_factory=dict)
    offered: dict[str, dict[OfferedState, int]] = field(default_factory=dict)

    def tally(self, variant: str, rate: str) -> _Tally:
        return self.tallies.setdefault((variant, rate), _Tally())


def trigger_rates(result_dirs: Iterable[Path]) -> list[TriggerRate]:
    """Activation and false activation rates per target skill over the given results."""
    groups: list[tuple[TriggerSkill, read.GroupEvidence]] = []
    for result_dir in result_dirs:
        summary = read.summary_or_none(result_dir)
        for record in summary["groups"] if summary else []:
            group = read.load_group(result_dir, record)
            targets = [_target(group, v) for v in ("candidate", "baseline")]
            skill = next((t for t in targets if t is not None), None)
            if skill is not None and _skill_read_checks(group):
                groups.append((skill, group))
    # A run that failed before its snapshot was recorded names only the declared path: it
    # belongs to that path's snapshot when the other runs agree on exactly one.
    known: dict[str, set[str]] = {}
    for skill, _ in groups:
        if skill["sha256"] is not None:
            known.setdefault(skill["declaredPath"], set()).add(skill["sha256"])
    skills: dict[tuple[str, str | None], _Skill] = {}
    for skill, group in groups:
        shas = known.get(skill["declaredPath"], set())
        if skill["sha256"] is None and len(shas) == 1:
            skill = {"declaredPath": skill["declaredPath"], "sha256": next(iter(shas))}
        key = (skill["declaredPath"], skill["sha256"])
        _add_group(skills.setdefault(key, _Skill(skill)), group)
    return [_finish(entry) for entry in skills.values()]


def _skill_read_checks(group: read.GroupEvidence) -> list[Mapping[str, Any]]:
    return [c for c in (group.grade or {}).get("checks") or [] if c.get("kind") == "skill-read"]


def _add_group(entry: _Skill, group: read.GroupEvidence) -> None:
    checks = _skill_read_checks(group)
    entry.groups.add(group.id)
    states = read.mapping(group.record.get("variants"))
    for variant in VARIANTS:
        state = str(states.get(variant) or "")
        if state == "not-selected" or not state:
            continue
        own = [c for c in checks if c.get("variant") == variant]
        expects = {str(read.mapping(c.get("expected")).get("read")) for c in own}
        seen = entry.targets.setdefault(variant, [])
        target = _target(group, variant)
        if variant == "candidate" and target is not None and target["sha256"] is None:
            target = entry.skill  # resolved from the other runs, as for the key
        if target not in seen:
            seen.append(target)
        count_run(entry.offered.setdefault(variant, {}), group.runs.get(variant))
        observed = _target_read(own)
        if expects & POSITIVE:
            entry.tally(variant, "activation").record(state, observed)
        if expects & NEGATIVE:
            entry.tally(variant, "falseActivation").record(state, observed)


def _target(group: read.GroupEvidence, variant: str) -> TriggerSkill | None:
    """The variant's target snapshot: declared path and sha256 (None when it has no target)."""
    declared = read.mapping(read.mapping(group.definition.get("variants")).get(variant))
    index = declared.get("target")
    if not isinstance(index, int) or isinstance(index, bool):
        return None
    skills: Sequence[Any] = declared.get("skills") or []
    path = str(skills[index]) if index < len(skills) else None
    resources = read.mapping((group.runs.get(variant) or {}).get("resources"))
    snapshots: Sequence[Any] = resources.get("skills") or []
    snapshot = read.mapping(snapshots[index]) if index < len(snapshots) else {}
    sha = snapshot.get("sha256")
    return {
        "declaredPath": str(snapshot.get("declaredPath") or path),
        "sha256": sha if isinstance(sha, str) else None,
    }


def _target_read(checks: Sequence[Mapping[str, Any]]) -> bool | None:
    """The observed `targetRead` of a variant, from any of its graded skill-read checks."""
    for check in checks:
        value = read.mapping(check.get("observed")).get("targetRead")
        if isinstance(value, bool):
            return value
    return None


def _finish(entry: _Skill) -> TriggerRate:
    variants: dict[str, TriggerVariant] = {}
    for variant in VARIANTS:
        variants[variant] = {
            "targets": entry.targets.get(variant, []),
            "activation": entry.tally(variant, "activation").counts(),
            "falseActivation": entry.tally(variant, "falseActivation").counts(),
        }
        if entry.offered.get(variant):
            variants[variant]["offered"] = entry.offered[variant]
    difference: dict[str, TriggerDifference | None] = {}
    for rate in RATES:
        base, cand = entry.tally("baseline", rate), entry.tally("candidate", rate)
        found = newcombe_difference(base.read, base.observed, cand.read, cand.observed)
        difference[rate] = (
            None if found is None else {"difference": found[0], "interval": [found[1], found[2]]}
        )
    return {
        "skill": entry.skill,
        "groups": sorted(entry.groups),
        "variants": variants,
        "difference": difference,
    }
