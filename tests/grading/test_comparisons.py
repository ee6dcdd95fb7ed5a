"""Baseline→candidate comparisons: every transition, and pairs that cannot be compared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.definitions import VARIANTS
from pytest_skill_eval.grading import transition
from tests.grading.grading_evidence import Built, grade, group, synthetic_run
from tests.grading.grading_scenarios import BODY_PROMPTS, body_run

SAME_CHECK = "comparison expectations must describe the same deterministic check"
PAIR_REQUIRED = "comparison requires one baseline and one candidate expectation"


@pytest.mark.parametrize(
    ("baseline", "candidate", "name"),
    [
        ("pass", "pass", "pass-to-pass"),
        ("pass", "fail", "pass-to-fail"),
        ("fail", "pass", "fail-to-pass"),
        ("fail", "fail", "fail-to-fail"),
        ("pass", "unavailable", "unavailable"),
        ("unavailable", "fail", "unavailable"),
        ("unavailable", "unavailable", "unavailable"),
    ],
)
def test_transition(baseline: str, candidate: str, name: str) -> None:
    assert transition(baseline, candidate) == name


def pair(comparison: str, kind: str, **fields: Any) -> list[dict[str, Any]]:
    """The same check declared for both variants under one comparison ID."""
    return [
        {
            "id": f"{variant}-{comparison}",
            "kind": kind,
            "variant": variant,
            "comparison": comparison,
            **fields,
        }
        for variant in VARIANTS
    ]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Built, Built]:
    """A baseline that never wrote result.json and a candidate that did."""
    return body_run(tmp_path, "baseline", write_result=False), body_run(tmp_path, "candidate")


def test_every_transition_from_recorded_runs(runs: tuple[Built, Built]) -> None:
    expectations = [
        *pair("result-written", "path", path="result.json", expect="exists"),
        *pair("plan-written", "path", path="plan.md", expect="exists"),
        *pair("result-not-written", "path", path="result.json", expect="absent"),
        *pair("nothing-written", "path", path="nowhere.txt", expect="exists"),
        *pair(
            "status",
            "json",
            path="result.json",
            expect="field-equals",
            pointer="/status",
            value="complete",
            turn=2,
        ),
    ]

    result = grade(group("body", expectations, BODY_PROMPTS), *runs)

    assert result["errors"] == []
    assert result["state"] == "complete"
    assert [(c["id"], c["transition"]) for c in result["comparisons"]] == [
        ("result-written", "fail-to-pass"),
        ("plan-written", "pass-to-pass"),
        ("result-not-written", "pass-to-fail"),
        ("nothing-written", "fail-to-fail"),
        ("status", "fail-to-pass"),
    ]
    assert result["comparisons"][0] == {
        "id": "result-written",
        "kind": "path",
        "baseline": {"check": "baseline-result-written", "state": "fail"},
        "candidate": {"check": "candidate-result-written", "state": "pass"},
        "transition": "fail-to-pass",
    }


def test_unavailable_side_gives_unavailable_transition(tmp_path: Path) -> None:
    baseline = body_run(tmp_path, "baseline")
    candidate = synthetic_run(tmp_path, "candidate", "cancelled", BODY_PROMPTS)
    expectations = pair("result-written", "path", path="result.json", expect="exists")

    result = grade(group("body", expectations, BODY_PROMPTS), baseline, candidate)

    assert result["errors"] == []
    assert result["comparisons"][0]["baseline"]["state"] == "pass"
    assert result["comparisons"][0]["candidate"]["state"] == "unavailable"
    assert result["comparisons"][0]["transition"] == "unavailable"
    assert result["state"] == "complete"  # not every check is unavailable


def _with(expectation: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**expectation, **changes}


BASE, CAND = pair("result-written", "path", path="result.json", expect="exists")

MISMATCHED = [
    ("only-baseline", [BASE], "result-written", PAIR_REQUIRED),
    ("two-baselines", [BASE, _with(CAND, variant="baseline")], "result-written", PAIR_REQUIRED),
    ("three-members", [BASE, CAND, _with(CAND, id="third")], "result-written", PAIR_REQUIRED),
    (
        "different-kinds",
        [BASE, {**CAND, "kind": "file-text", "expect": "contains", "value": "x"}],
        "result-written",
        f"{SAME_CHECK}: kinds differ (path and file-text)",
    ),
    (
        "different-paths",
        [BASE, _with(CAND, path="plan.md")],
        "result-written",
        f"{SAME_CHECK}: expected values differ",
    ),
    (
        "different-turns",
        [BASE, _with(CAND, turn=2)],
        "result-written",
        f"{SAME_CHECK}: expected values differ",
    ),
    (
        "candidate-errors",
        [BASE, _with(CAND, path="../result.json")],
        "result-written",
        f"{SAME_CHECK}: the candidate expectation could not be graded",
    ),
]


@pytest.mark.parametrize(
    ("expectations", "error_id", "reason"),
    [case[1:] for case in MISMATCHED],
    ids=[case[0] for case in MISMATCHED],
)
def test_mismatched_pair_is_a_grade_error(
    runs: tuple[Built, Built], expectations: list[dict[str, Any]], error_id: str, reason: str
) -> None:
    result = grade(group("body", expectations, BODY_PROMPTS), *runs)

    assert result["state"] == "grade-error"
    assert result["comparisons"] == []
    assert {"id": error_id, "reason": reason} in result["errors"]


@pytest.mark.parametrize("identity", ["Bad_Id", "", 7, None, "trailing-"])
def test_invalid_comparison_identity(runs: tuple[Built, Built], identity: object) -> None:
    expectations = [_with(BASE, comparison=identity), _with(CAND, comparison=identity)]

    result = grade(group("body", expectations, BODY_PROMPTS), *runs)

    assert result["errors"] == [
        {"id": "baseline-result-written", "reason": "invalid comparison identity"},
        {"id": "candidate-result-written", "reason": "invalid comparison identity"},
    ]
    # The checks themselves are still facts.
    assert [c["state"] for c in result["checks"]] == ["fail", "pass"]
    assert result["comparisons"] == []
