"""Cross-field rules of a group: whether an expectation fits it, and what a comparison pairs."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..common.wording import counted
from .expectations import Expectation
from .fields import rule_error, show


def fit_problem(
    expectation: Expectation, group_type: str, turn_count: int
) -> tuple[str, str] | None:
    """The field at fault and why an expectation does not fit its group; None when it fits.

    Loading reports it as a definition error and grading as a grade error, in the same words.
    """
    kind = expectation.kind
    if group_type not in expectation.group_types:
        if group_type == "body":
            return (
                "kind",
                f"'{kind}' expectations are only valid in description groups; in a body group "
                "the target is delivered explicitly (use resource-read to observe reads)",
            )
        return "kind", f"'{kind}' expectations are only valid in body groups"
    if expectation.turn is not None and expectation.turn > turn_count:
        return (
            "turn",
            f"turn {expectation.turn} is out of range: the group declares {turn_count} "
            f"turn{'s' if turn_count != 1 else ''} (use 1..{turn_count})",
        )
    return None


def check_comparisons(expectations: tuple[Expectation, ...]) -> None:
    """Each comparison pairs one baseline and one candidate expectation of the same check."""
    members: dict[str, list[int]] = {}
    for index, expectation in enumerate(expectations):
        if expectation.comparison is not None:
            members.setdefault(expectation.comparison, []).append(index)
    for comparison, indices in members.items():
        first = expectations[indices[0]]
        if len(indices) == 1:
            raise rule_error(
                f"comparison '{comparison}' has only this expectation; it needs exactly one "
                "baseline and one candidate expectation describing the same check",
                ("expectations", indices[0], "comparison"),
            )
        if len(indices) > 2:
            raise rule_error(
                f"comparison '{comparison}' is shared by more than two expectations; it pairs "
                "exactly one baseline and one candidate expectation",
                ("expectations", indices[2], "comparison"),
            )
        second = expectations[indices[1]]
        at: tuple[str | int, ...] = ("expectations", indices[1])
        if first.variant == second.variant:
            raise rule_error(
                f"comparison '{comparison}' pairs two {first.variant} expectations; it needs "
                "one baseline and one candidate expectation",
                (*at, "variant"),
            )
        first_kind, second_kind = first.kind, second.kind
        if first_kind != second_kind:
            raise rule_error(
                f"comparison '{comparison}' pairs a '{first_kind}' with a '{second_kind}' "
                "expectation; compared expectations must have the same kind",
                (*at, "kind"),
            )
        left, right = first.expected_predicate(), second.expected_predicate()
        for key, value in left.items():
            if not same_json(value, right.get(key)):
                raise rule_error(
                    f"comparison '{comparison}' pairs expectations that differ in '{key}' "
                    f"({show(value)} vs {show(right.get(key))}); compared expectations must "
                    "describe the same check",
                    (*at, key),
                )


# `{{skill:N}}` in a declared command's argv: the path of the variant's N-th skill snapshot.
SKILL_PLACEHOLDER = re.compile(r"\{\{skill:(\d+)\}\}")


def check_command_placeholders(argvs: Sequence[Sequence[str]], skill_counts: Sequence[int]) -> None:
    """Each `{{skill:N}}` in a command's argv names a skill some variant declares."""
    most = max(skill_counts, default=0)
    for index, argv in enumerate(argvs):
        for part, value in enumerate(argv):
            for match in SKILL_PLACEHOLDER.finditer(value):
                if int(match.group(1)) < most:
                    continue
                raise rule_error(
                    f"{match.group(0)} names no skill: the variants declare at most "
                    f"{counted(most, 'skill')} ({_skill_hint(most)})",
                    ("commands", index, "argv", part),
                )


def _skill_hint(most: int) -> str:
    if most == 0:
        return "declare the skill in a variant's 'skills'"
    return "use {{skill:0}}" if most == 1 else f"use {{{{skill:0}}}} to {{{{skill:{most - 1}}}}}"


def same_json(left: object, right: object) -> bool:
    """JSON equality without Python's coercions: true is not 1, but 1 equals 1.0."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_json(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(same_json, left, right))
    return type(left) is type(right) and left == right
