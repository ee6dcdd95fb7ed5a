"""The noise floor: how often a check disagrees with itself when both arms are the candidate.

`--skill-eval-noise-floor N` runs N trials in which the baseline arm is replaced by the
candidate's variant definition (each group's recorded definition.json shows the copy, and every
trial's invocation.json says `noiseFloor`). A comparison of identical arms can only disagree
through noise: the model's, the host's or the check's own. The aggregate records, per candidate
check that a comparison pairs, the disagreements over the trials where both arms were observed,
their rate and its 95% Wilson interval.

The bound is zero: a check whose identical arms disagreed even once (equivalently, whose
Wilson lower bound is above 0) is `flaky`. Identical arms of a deterministic check never
disagree, so one disagreement is proof, not an estimate; a rarer noise the floor did not see
stays possible, and the upper bound of the interval says how rare it can still be.

A flaky check never gates (`--skill-eval-fail-on`) a later run of the same inputs under the
same results directory until a newer noise floor no longer finds it flaky: the newest floor
decides. Only a floor whose aggregate and trials verify, of the same inputs, and not a copy or a
part of another floor can decide (`floor_choice.py`); the run's invocation names it with its
trials' seal roots, and the floors newer than it that were set aside.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..common.optionvalues import positive_int, refuse
from ..common.wording import counted
from ..definitions.loader import LoadedGroup
from ..errors import SkillEvalError
from ..evidence import layout, read
from ..evidence.aggregates import FloorCheck, NoiseFloor
from .stats import wilson_interval

BOUND = 0.0
"""A check is flaky when its identical arms' disagreement rate is above this bound."""

DISAGREEING = ("fail-to-pass", "pass-to-fail")
AGREEING = ("pass-to-pass", "fail-to-fail")


class NoiseFloorError(SkillEvalError):
    """`--skill-eval-noise-floor` asked for with something it cannot work with."""


def on_host(loaded: LoadedGroup, host: str, *, identical: bool) -> LoadedGroup:
    """`loaded` as it runs on `host`, with identical arms under the noise floor."""
    moved = dataclasses.replace(loaded, group=loaded.group.on_host(host))
    return identical_arms(moved) if identical else moved


def measured_by(result_dir: Path) -> bool:
    """Whether a result is a trial of a noise floor (its arms identical)."""
    invocation = read.load_invocation(result_dir)
    return invocation is not None and invocation.get("identicalArms") is True


def recorded_flaky(result_dir: Path) -> list[str]:
    """The checks a result's invocation recorded as flaky: they never gate."""
    invocation = read.load_invocation(result_dir)
    gate = invocation.get("flakyGate") if invocation is not None else None
    return [str(key) for key in gate.get("checks", [])] if isinstance(gate, Mapping) else []


def identical_arms(loaded: LoadedGroup) -> LoadedGroup:
    """`loaded` with its baseline arm replaced by the candidate's variant definition."""
    variants = loaded.group.variants
    group = loaded.group.model_copy(
        update={"variants": variants.model_copy(update={"baseline": variants.candidate})}
    )
    raw = dict(loaded.raw)
    raw["variants"] = {**raw["variants"], "baseline": raw["variants"]["candidate"]}
    return LoadedGroup(
        path=loaded.path, position=loaded.position, group=group, raw=raw, sha256=loaded.sha256
    )


def check_key(group_label: str, check_id: str) -> str:
    """How the floor names a check: `<group>[@host]::<check id>`."""
    return f"{group_label}::{check_id}"


def measure(trials: Sequence[Path]) -> NoiseFloor:
    """The `noiseFloor` of an aggregate over the trials of a noise-floor run."""
    per_check: dict[str, FloorCheck] = {}
    for result_dir in trials:
        summary = read.summary_or_none(result_dir)
        for record in summary["groups"] if summary else []:
            grade = read.read_grade(layout.record_dir(result_dir, record), record)
            label = layout.group_dir_name(record["id"], layout.record_host(record))
            for comparison in grade.get("comparisons", []) if grade else []:
                transition = comparison["transition"]
                key = check_key(label, comparison["candidate"]["check"])
                row = per_check.setdefault(
                    key,
                    {
                        "group": label,
                        "comparison": comparison["id"],
                        "baseline": comparison["baseline"]["check"],
                        "disagreements": 0,
                        "trials": 0,
                    },
                )
                if transition in DISAGREEING + AGREEING:
                    row["trials"] += 1
                    row["disagreements"] += transition in DISAGREEING
    for row in per_check.values():
        observed, disagreed = row["trials"], row["disagreements"]
        interval = wilson_interval(disagreed, observed)
        row["rate"] = disagreed / observed if observed else None
        row["interval"] = list(interval) if interval else None
        row["flaky"] = row["rate"] is not None and row["rate"] > BOUND
    return {"trials": len(trials), "perCheck": per_check, "bound": BOUND}


def flaky_keys(floor: Mapping[str, Any]) -> list[str]:
    """The checks a measured floor found flaky, each as `check_key` names it: the candidate's
    check and the baseline check its comparison pairs with it (as noisy on identical arms)."""
    keys = set()
    for key, row in (floor.get("perCheck") or {}).items():
        if row.get("flaky"):
            keys |= {key, check_key(str(row.get("group")), str(row.get("baseline")))}
    return sorted(keys)


def decided_lines(invocation: Mapping[str, Any] | None) -> list[str]:
    """What a run's invocation says decided its flaky checks: the floor by id, its trials by id
    and seal root, and each kind of floor set aside (one line each); empty without a floor."""
    gate = read.mapping(read.mapping(invocation).get("flakyGate"))
    if not gate:
        return []
    chosen = gate.get("noiseFloor")
    lines = []
    if isinstance(chosen, str):
        trials = ", ".join(
            f"{read.mapping(t).get('id')} {read.mapping(t).get('root')}"
            for t in gate.get("trials") or []
        )
        checks = gate.get("checks") or []
        lines.append(
            f"noise floor: {chosen} decides ({counted(len(checks), 'check')} flaky, never "
            f"gating)" + (f"; its trials: {trials}" if trials else "")
        )
    return [*lines, *(str(line) for line in gate.get("setAside") or [])]


def ignored(flaky: Sequence[str], group_label: str, data: Mapping[str, Any]) -> bool:
    """Whether a check, or a comparison through either of its checks, is known flaky."""
    if "transition" in data:
        ids = [data["baseline"]["check"], data["candidate"]["check"]]
    else:
        ids = [data["id"]]
    return any(check_key(group_label, i) in flaky for i in ids)


def floor_trials(value: Any, given: Sequence[str]) -> int:
    """`--skill-eval-noise-floor N` as its number of trials, refused with what it excludes."""
    if given:
        raise NoiseFloorError(
            f"--skill-eval-noise-floor runs its own trials of identical arms; drop "
            f"--skill-eval-{given[0]}"
        )
    trials = positive_int("--skill-eval-noise-floor", value, "an integer of at least 2")
    if trials < 2:
        raise refuse("--skill-eval-noise-floor", value, "an integer of at least 2")
    return trials
