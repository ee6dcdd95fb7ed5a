"""Deterministic grading of one group: every expectation against recorded evidence.

The grade is a pure function of the definition, the two persisted runs and the files beside
them. Nothing here raises for bad evidence: every problem becomes a `grade-error` entry.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytest_skill_eval.grading.comparisons import grade_comparisons, transition
from pytest_skill_eval.grading.interaction import (
    grade_context_text,
    grade_response_text,
    grade_tool_call,
)
from pytest_skill_eval.grading.reads import grade_resource_read, grade_skill_read
from pytest_skill_eval.grading.support import (
    VARIANTS,
    Check,
    Context,
    EvidenceError,
    ExpectationError,
    GradeError,
    Spec,
)
from pytest_skill_eval.grading.workspace_checks import (
    grade_changed_paths,
    grade_file_text,
    grade_json,
    grade_path,
)

__all__ = ["grade_group", "transition"]

Grader = Callable[[Spec, Context], Check]

GRADERS: Mapping[str, Grader] = {
    "skill-read": grade_skill_read,
    "resource-read": grade_resource_read,
    "path": grade_path,
    "changed-paths": grade_changed_paths,
    "file-text": grade_file_text,
    "json": grade_json,
    "response-text": grade_response_text,
    "tool-call": grade_tool_call,
    "context-text": grade_context_text,
}
# Kinds that observe a workspace or an RPC turn, which only body runs have.
BODY_ONLY = frozenset(
    {"path", "changed-paths", "file-text", "json", "response-text", "tool-call", "context-text"}
)
DESCRIPTION_ONLY = frozenset({"skill-read"})


def grade_group(
    group_raw: Mapping[str, Any],
    runs: Mapping[str, Mapping[str, Any]],
    run_dirs: Mapping[str, Path],
    run_json_sha256: Mapping[str, str],
) -> dict[str, Any]:
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


def grade_state(checks: list[Check], errors: list[dict[str, Any]]) -> str:
    """`grade-error` on any error, `unavailable` when every check is, else `complete`."""
    if errors:
        return "grade-error"
    if checks and all(check["state"] == "unavailable" for check in checks):
        return "unavailable"
    return "complete"


def _evidence(
    run_dirs: Mapping[str, Path], run_json_sha256: Mapping[str, str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    evidence: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    for variant in VARIANTS:
        directory, digest = run_dirs.get(variant), run_json_sha256.get(variant)
        if directory is None or not isinstance(digest, str):
            evidence[variant] = {"path": None, "sha256": None}
            errors.append({"id": None, "reason": f"{variant} run.json evidence is not identified"})
            continue
        path = os.path.abspath(os.path.join(os.fspath(directory), "run.json"))
        evidence[variant] = {"path": path, "sha256": digest}
    return evidence, errors


def _grade(
    group_raw: Mapping[str, Any],
    runs: Mapping[str, Mapping[str, Any]],
    run_dirs: Mapping[str, Path],
) -> tuple[list[Check], list[dict[str, Any]], list[dict[str, Any]]]:
    group_type = group_raw.get("type")
    if group_type not in ("description", "body"):
        raise ValueError("group.type must be description or body")
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
    errors: list[dict[str, Any]] = []
    graded: dict[str, Check] = {}
    seen: set[str] = set()
    for expectation in expectations:
        identity = _identity(expectation)
        try:
            if identity is not None and identity in seen:
                raise ExpectationError(f"duplicate expectation id: {identity}")
            if identity is not None:
                seen.add(identity)
            check = _grade_one(expectation, group_type, turn_count, contexts)
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
    expectation: object,
    group_type: str,
    turn_count: int,
    contexts: Mapping[str, Context | None],
) -> Check:
    if not isinstance(expectation, Mapping):
        raise ExpectationError("expectation must be an object")
    if _identity(expectation) is None:
        raise ExpectationError("expectation id must be a non-empty string")
    kind = expectation.get("kind")
    grader = GRADERS.get(kind) if isinstance(kind, str) else None
    if grader is None:
        raise ExpectationError(f"unsupported expectation kind: {kind}")
    variant = expectation.get("variant")
    if variant not in VARIANTS:
        raise ExpectationError(f"invalid {kind} expectation: variant must be baseline or candidate")
    if kind in BODY_ONLY and group_type != "body":
        raise ExpectationError(f"invalid {kind} expectation: {kind} needs a body group")
    if kind in DESCRIPTION_ONLY and group_type != "description":
        raise ExpectationError(f"invalid {kind} expectation: {kind} needs a description group")
    context = contexts[variant]
    if context is None:
        raise EvidenceError(f"run evidence is malformed: the {variant} run has no state")
    return grader(Spec(expectation, turn_count), context)


def _turn_count(value: object) -> int:
    if isinstance(value, Mapping):
        turns = value.get("turns")
        if isinstance(turns, list) and turns:
            return len(turns)
        if isinstance(value.get("prompt"), str):
            return 1
    raise ValueError("group.input must hold a prompt or a non-empty turns array")


def _identity(expectation: object) -> str | None:
    if isinstance(expectation, Mapping):
        identity = expectation.get("id")
        if isinstance(identity, str) and identity:
            return identity
    return None


def _message(error: BaseException) -> str:
    return str(error) or type(error).__name__
