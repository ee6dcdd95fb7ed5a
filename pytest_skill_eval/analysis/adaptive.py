"""`--skill-eval-trials auto`: whether a group needs another trial, decided from its evidence.

The decision for trial k of a group reads only the group's persisted grades of trials 1…k−1,
so every process that asks (the worker about to run trial k, the controller recording what
never ran, the aggregate explaining why a group stopped) gets the same answer. A group runs
another trial while any of its comparisons is unresolved by the sequential test
(`sequential.py`) and may still resolve by the maximum (its futility rule); a group without
comparisons has nothing to resolve and runs one trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..definitions import Group
from ..errors import SkillEvalError
from ..evidence import layout, read
from .sequential import Decision, decide

POLL_S = 0.1
MAX_WITHOUT_AUTO = (
    "--skill-eval-max-trials needs --skill-eval-trials auto; with a fixed number of trials, "
    "give it as --skill-eval-trials N"
)


class AutoTrialsError(SkillEvalError):
    """`--skill-eval-trials auto` asked for with something it cannot work with."""


def check_auto(maximum: int, *, planned: bool, one_variant: bool) -> None:
    """Refuse what adaptive trials cannot decide over, before anything runs."""
    if planned:
        raise AutoTrialsError(
            "--skill-eval-trials auto decides after each trial on one machine; a plan fixes "
            "its trials (give `skill-eval plan --trials N` instead)"
        )
    if one_variant:
        raise AutoTrialsError(
            "--skill-eval-trials auto stops when baseline and candidate are told apart; it "
            "needs both variants, so it cannot be combined with --skill-eval-variant"
        )
    if maximum < 2:
        raise AutoTrialsError(
            f'--skill-eval-max-trials "{maximum}" is not accepted with --skill-eval-trials auto; '
            "use 2 or more (auto needs two trials to compare)"
        )


def comparison_ids(group: Group) -> list[str]:
    """The group's comparisons, in definition order."""
    seen: list[str] = []
    for expectation in group.expectations:
        if expectation.comparison is not None and expectation.comparison not in seen:
            seen.append(expectation.comparison)
    return seen


def transitions(
    trial_dirs: Sequence[Path], group_id: str, host: str
) -> dict[str, list[str | None]]:
    """Per comparison, its transition in each given trial (None where it has none)."""
    out: dict[str, list[str | None]] = {}
    for index, result_dir in enumerate(trial_dirs):
        group_dir = layout.group_dir(result_dir, group_id, host)
        record = read.group_record(group_dir)
        grade = read.read_grade(group_dir, record) if record is not None else None
        for comparison in grade.get("comparisons", []) if grade is not None else []:
            sequence = out.setdefault(comparison["id"], [])
            sequence.extend([None] * (index - len(sequence)))
            sequence.append(comparison.get("transition"))
    for sequence in out.values():
        sequence.extend([None] * (len(trial_dirs) - len(sequence)))
    return out


def decisions(
    group: Group, trial_dirs: Sequence[Path], host: str, maximum: int | None = None
) -> dict[str, Decision]:
    """The sequential decision of each of the group's comparisons over `trial_dirs` (with
    `maximum`, whether an unresolved one stops for futility)."""
    seen = transitions(trial_dirs, group.id, host)
    return {
        name: decide(seen.get(name, [None] * len(trial_dirs)), maximum=maximum)
        for name in comparison_ids(group)
    }


# Why a comparison stops unresolved before the maximum, as the skip reason says it.
FUTILITY_TEXT = {
    "cannot-resolve": "cannot resolve in the trials left",
    "unlikely-to-resolve": "unlikely to resolve by the maximum",
}


@dataclass(frozen=True, slots=True)
class Stop:
    """Why a group needs no further trial."""

    after: int  # the trials it ran
    reason: str  # resolved | futility | no-comparisons
    futile: tuple[str, ...] = ()  # `<comparison> <why>`, each stopped for futility

    def message(self, trial: int) -> str:
        """The skip reason of the group's items in `trial`."""
        if self.reason == "no-comparisons":
            return f"adaptive trials: the group has no comparison to resolve; trial {trial} not run"
        if self.reason == "futility":
            return (
                f"adaptive trials: after trial {self.after} every comparison is resolved or "
                f"stops for futility ({'; '.join(self.futile)}); trial {trial} not run"
            )
        return (
            f"adaptive trials: every comparison resolved by the sequential test after trial "
            f"{self.after}; trial {trial} not run"
        )


def stop_before(
    group: Group, trial_dirs: Sequence[Path], host: str, maximum: int | None = None
) -> Stop | None:
    """Whether the group stops before the next trial, given the trials it ran so far: every
    comparison resolved, or (with `maximum`) each unresolved one stopping for futility."""
    if not trial_dirs:
        return None
    names = comparison_ids(group)
    if not names:
        return Stop(len(trial_dirs), "no-comparisons")
    found = decisions(group, trial_dirs, host, maximum)
    if all(found[name].resolved_at is not None for name in names):
        return Stop(max(found[name].resolved_at or 0 for name in names), "resolved")
    if all(found[n].resolved_at is not None or found[n].futility is not None for n in names):
        futile = tuple(
            f"{name} {FUTILITY_TEXT[found[name].futility or '']} "
            f"({found[name].fail_to_pass} fail-to-pass, {found[name].pass_to_fail} "
            f"pass-to-fail in {len(trial_dirs)})"
            for name in names
            if found[name].resolved_at is None
        )
        return Stop(len(trial_dirs), "futility", futile)
    return None


def wait_for_records(
    group_dirs: Sequence[Path],
    cancelled: Callable[[], bool],
    *,
    patience_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Wait until each group directory holds its group record (another worker is finishing
    the earlier trial). False on cancellation or when `patience_s` passed without them."""
    deadline = time.monotonic() + patience_s
    while not all(read.group_record(d) is not None for d in group_dirs):
        if cancelled() or time.monotonic() > deadline:
            return False
        sleep(POLL_S)
    return True
