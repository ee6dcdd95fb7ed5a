"""Deterministic grading of one group: every expectation against recorded evidence.

The grade is a pure function of the definition, the two persisted runs and the files beside
them. Nothing here raises for bad evidence: every problem becomes a `grade-error` entry.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, assert_never

from pydantic import TypeAdapter, ValidationError

from pytest_skill_eval.definitions import (
    EXPECTATION_KINDS,
    VARIANTS,
    ChangedPathsExpectation,
    ContextTextExpectation,
    Expectation,
    FileTextExpectation,
    GroupType,
    Input,
    JsonExpectation,
    PathExpectation,
    ResourceReadExpectation,
    ResponseTextExpectation,
    SkillReadExpectation,
    ToolCallExpectation,
)
from pytest_skill_eval.definitions.conversion import describe, pointer_of
from pytest_skill_eval.definitions.rules import fit_problem
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.evidence.records import (
    Check,
    Comparison,
    EvidenceRef,
    GradeErrorEntry,
    GradeRecord,
)
from pytest_skill_eval.grading.comparisons import grade_comparisons, transition
from pytest_skill_eval.grading.interaction import (
    grade_context_text,
    grade_response_text,
    grade_tool_call,
)
from pytest_skill_eval.grading.reads import grade_resource_read, grade_skill_read
from pytest_skill_eval.grading.support import (
    Context,
    EvidenceError,
    ExpectationError,
    GradeError,
)
from pytest_skill_eval.grading.workspace_checks import (
    grade_changed_paths,
    grade_file_text,
    grade_json,
    grade_path,
)

__all__ = ["grade_group", "parse_expectation", "transition"]

EXPECTATION: TypeAdapter[Expectation] = TypeAdapter(Expectation)
GROUP_TYPE: TypeAdapter[GroupType] = TypeAdapter(GroupType)


def grade_group(
    group_raw: Mapping[str, Any],
    runs: Mapping[str, Mapping[str, Any]],
    run_dirs: Mapping[str, Path],
    run_json_sha256: Mapping[str, str],
) -> GradeRecord:
    """Grade a group's expectations and comparisons; the content of deterministic-grade.json."""
    evidence, evidence_errors = _evidence(run_dirs, run_json_sha256)
    try:
        checks, comparisons, errors = _grade(group_raw, runs, run_dirs)
    except Exception as error:
        # A defect or a shape nobody anticipated must still leave grade evidence behind.
        return {
            "schema_version": 1,
            "state": "grade-error",
            "evidence": evidence,
            "checks": [],
            "comparisons": [],
            "errors": [
                *evidence_errors,
                {"id": None, "reason": f"deterministic grading failed: {_message(error)}"},
            ],
        }
    errors = [*evidence_errors, *errors]
    return {
        "schema_version": 1,
        "state": grade_state(checks, errors),
        "evidence": evidence,
        "checks": checks,
        "comparisons": comparisons,
        "errors": errors,
    }


def grade_state(checks: list[Check], errors: list[GradeErrorEntry]) -> str:
    """`grade-error` on any error, `unavailable` when every check is, else `complete`."""
    if errors:
        return "grade-error"
    if checks and all(check["state"] == "unavailable" for check in checks):
        return "unavailable"
    return "complete"


def _evidence(
    run_dirs: Mapping[str, Path], run_json_sha256: Mapping[str, str]
) -> tuple[dict[str, EvidenceRef], list[GradeErrorEntry]]:
    evidence: dict[str, EvidenceRef] = {}
    errors: list[GradeErrorEntry] = []
    for variant in VARIANTS:
        directory, digest = run_dirs.get(variant), run_json_sha256.get(variant)
        if directory is None or not isinstance(digest, str):
            evidence[variant] = {"path": None, "sha256": None}
            reason = f"{variant} {layout.RUN} evidence is not identified"
            errors.append({"id": None, "reason": reason})
            continue
        path = os.path.abspath(os.path.join(os.fspath(directory), layout.RUN))
        evidence[variant] = {"path": path, "sha256": digest}
    return evidence, errors


def _grade(
    group_raw: Mapping[str, Any],
    runs: Mapping[str, Mapping[str, Any]],
    run_dirs: Mapping[str, Path],
) -> tuple[list[Check], list[Comparison], list[GradeErrorEntry]]:
    group_type = _group_type(group_raw.get("type"))
    expectations = group_raw.get("expectations")
    if not isinstance(expectations, list):
        raise ValueError("group.expectations must be an array")
    turn_count = _turn_count(group_raw.get("input"))
    contexts: dict[str, Context | None] = {}
    for variant in VARIANTS:
        run, directory = runs.get(variant), run_dirs.get(variant)
        # A run without a state is unusable; its expectations become errors, one by one.
        usable = isinstance(run, Mapping) and isinstance(run.get("state"), str)
        contexts[variant] = (
            Context(
                group_type, turn_count, variant, run, None if directory is None else Path(directory)
            )
            if usable and run is not None
            else None
        )

    checks: list[Check] = []
    errors: list[GradeErrorEntry] = []
    graded: dict[str, Check] = {}
    seen: set[str] = set()
    for index, expectation in enumerate(expectations):
        identity = _identity(expectation)
        try:
            if identity is not None and identity in seen:
                raise ExpectationError(f"duplicate expectation id: {identity}")
            if identity is not None:
                seen.add(identity)
            check = _grade_one(group_raw, index, group_type, turn_count, contexts)
        except (GradeError, EvidenceError) as error:
            errors.append({"id": identity, "reason": str(error)})
            continue
        except Exception as error:
            errors.append({"id": identity, "reason": _message(error)})
            continue
        checks.append(check)
        graded[check["id"]] = check
    comparisons, comparison_errors = grade_comparisons(expectations, graded)
    return checks, comparisons, [*errors, *comparison_errors]


def _grade_one(
    group_raw: Mapping[str, Any],
    index: int,
    group_type: str,
    turn_count: int,
    contexts: Mapping[str, Context | None],
) -> Check:
    expectation = parse_expectation(group_raw, index, group_type, turn_count)
    context = contexts[expectation.variant]
    if context is None:
        variant = expectation.variant
        raise EvidenceError(f"run evidence is malformed: the {variant} run has no state")
    return _dispatch(expectation, context)


def parse_expectation(
    group_raw: Mapping[str, Any], index: int, group_type: str, turn_count: int
) -> Expectation:
    """Expectation `index` of a raw group, read through the definition models.

    A definition that loaded has passed the same models; this guards evidence graded again
    later. Any violation is an ExpectationError pointing into the group, worded as at load
    time. The comparison identity is left to the comparison pass, so that a bad pairing never
    hides the check's own result.
    """
    raw = group_raw["expectations"][index]
    if not isinstance(raw, Mapping):
        raise ExpectationError("expectation must be an object")
    if _identity(raw) is None:
        raise ExpectationError("expectation id must be a non-empty string")
    kind = raw.get("kind")
    label = f"invalid {kind} expectation" if kind in EXPECTATION_KINDS else "invalid expectation"
    try:
        expectation = EXPECTATION.validate_python(
            {key: value for key, value in raw.items() if key != "comparison"}
        )
    except ValidationError as error:
        pointer, message = describe(error, group_raw, ("expectations", index), Expectation)
        raise ExpectationError(f"{label}: {pointer}: {message}") from None
    problem = fit_problem(expectation, group_type, turn_count)
    if problem is not None:
        field, message = problem
        pointer = pointer_of(("expectations", index, field))
        raise ExpectationError(f"{label}: {pointer}: {message}")
    return expectation


def _dispatch(expectation: Expectation, context: Context) -> Check:
    """The kinds table: each expectation model to the grader of its kind."""
    match expectation:
        case SkillReadExpectation():
            return grade_skill_read(expectation, context)
        case ResourceReadExpectation():
            return grade_resource_read(expectation, context)
        case PathExpectation():
            return grade_path(expectation, context)
        case ChangedPathsExpectation():
            return grade_changed_paths(expectation, context)
        case FileTextExpectation():
            return grade_file_text(expectation, context)
        case JsonExpectation():
            return grade_json(expectation, context)
        case ResponseTextExpectation():
            return grade_response_text(expectation, context)
        case ToolCallExpectation():
            return grade_tool_call(expectation, context)
        case ContextTextExpectation():
            return grade_context_text(expectation, context)
        case _:
            assert_never(expectation)


def _group_type(value: object) -> GroupType:
    try:
        return GROUP_TYPE.validate_python(value)
    except ValidationError:
        raise ValueError("group.type must be description or body") from None


def _turn_count(value: object) -> int:
    try:
        task = Input.model_validate(value)
    except ValidationError:
        raise ValueError("group.input must hold a prompt or a non-empty turns array") from None
    return 1 if task.turns is None else len(task.turns)


def _identity(expectation: object) -> str | None:
    if isinstance(expectation, Mapping):
        identity = expectation.get("id")
        if isinstance(identity, str) and identity:
            return identity
    return None


def _message(error: BaseException) -> str:
    return str(error) or type(error).__name__
