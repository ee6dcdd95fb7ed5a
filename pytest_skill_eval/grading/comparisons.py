"""Baseline→candidate comparisons: factual transitions between two equal checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from pytest_skill_eval.definitions import VARIANTS
from pytest_skill_eval.definitions.fields import Id
from pytest_skill_eval.evidence.records import Check, Comparison, GradeErrorEntry
from pytest_skill_eval.grading.values import json_equal

GRADED = ("pass", "fail")
PAIR_REQUIRED = "comparison requires one baseline and one candidate expectation"
SAME_CHECK = "comparison expectations must describe the same deterministic check"
_ID: TypeAdapter[str] = TypeAdapter(Id)


def transition(baseline_state: str, candidate_state: str) -> str:
    """`<baseline>-to-<candidate>` when both checks passed or failed, else `unavailable`."""
    if baseline_state in GRADED and candidate_state in GRADED:
        return f"{baseline_state}-to-{candidate_state}"
    return "unavailable"


def grade_comparisons(
    expectations: Sequence[Any], checks: Mapping[str, Check]
) -> tuple[list[Comparison], list[GradeErrorEntry]]:
    """Comparisons in first-declared order, plus errors for pairs that cannot be compared.

    `checks` holds the checks of the expectations that graded without error, by ID.
    """
    errors: list[GradeErrorEntry] = []
    pairs: dict[str, list[Mapping[str, Any]]] = {}
    for expectation in expectations:
        if not isinstance(expectation, Mapping) or "comparison" not in expectation:
            continue
        identity = expectation["comparison"]
        if not _is_id(identity):
            errors.append({"id": _id(expectation), "reason": "invalid comparison identity"})
            continue
        pairs.setdefault(identity, []).append(expectation)

    comparisons: list[Comparison] = []
    for identity, members in pairs.items():
        by_variant = {member.get("variant"): member for member in members}
        if len(members) != 2 or set(by_variant) != set(VARIANTS):
            errors.append({"id": identity, "reason": PAIR_REQUIRED})
            continue
        baseline = checks.get(_id(by_variant["baseline"]) or "")
        candidate = checks.get(_id(by_variant["candidate"]) or "")
        problem = _mismatch(baseline, candidate)
        if problem is not None or baseline is None or candidate is None:
            errors.append({"id": identity, "reason": f"{SAME_CHECK}: {problem}"})
            continue
        comparisons.append(
            {
                "id": identity,
                "kind": baseline["kind"],
                "baseline": {"check": baseline["id"], "state": baseline["state"]},
                "candidate": {"check": candidate["id"], "state": candidate["state"]},
                "transition": transition(baseline["state"], candidate["state"]),
            }
        )
    return comparisons, errors


def _mismatch(baseline: Check | None, candidate: Check | None) -> str | None:
    if baseline is None or candidate is None:
        missing = "baseline" if baseline is None else "candidate"
        return f"the {missing} expectation could not be graded"
    if baseline["kind"] != candidate["kind"]:
        return f"kinds differ ({baseline['kind']} and {candidate['kind']})"
    if not json_equal(baseline["expected"], candidate["expected"]):
        return "expected values differ"
    return None


def _is_id(value: object) -> bool:
    try:
        _ID.validate_python(value)
    except ValidationError:
        return False
    return True


def _id(expectation: Mapping[str, Any]) -> str | None:
    identity = expectation.get("id")
    return identity if isinstance(identity, str) else None
