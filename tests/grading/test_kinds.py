"""Every expectation kind and every `expect` value graded pass, fail and unavailable.

Each case grades one expectation against recorded evidence built in tmp_path. A coverage test
keeps the table honest: every (kind, expect) pair needs all three outcomes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import pytest

from pytest_skill_eval.definitions.expectations import EXPECTATION_MODELS, kind_of
from tests.grading.grading_evidence import (
    Built,
    Call,
    Turn,
    build_variant,
    grade,
    group,
    only_check,
    sha256,
    synthetic_run,
)
from tests.grading.grading_scenarios import (
    BODY_PROMPTS,
    DESCRIPTION_PROMPTS,
    FINAL_RESPONSE,
    RESULT_JSON,
    SYSTEM_PROMPT,
    body_run,
    description_run,
    one_shot_description_run,
    targetless_description_run,
)

# Read off the models, so that a new kind or expect value fails the coverage test below.
KIND_EXPECTS = {
    kind_of(model): get_args(model.model_fields["expect"].annotation)
    for model in EXPECTATION_MODELS
}


@dataclass(frozen=True)
class Scenario:
    group_type: str
    prompts: list[str]
    build: Callable[[Path, str], Built]


SCENARIOS: dict[str, Scenario] = {
    "body": Scenario("body", BODY_PROMPTS, lambda d, v: body_run(d, v)),
    "body-unsnapshotted": Scenario(
        "body", BODY_PROMPTS, lambda d, v: body_run(d, v, snapshot_turns=False)
    ),
    "body-unobserved": Scenario(
        "body", BODY_PROMPTS, lambda d, v: body_run(d, v, observations=False)
    ),
    "body-failed": Scenario(
        "body", BODY_PROMPTS, lambda d, v: body_run(d, v, state="infrastructure-failed")
    ),
    "body-cancelled": Scenario(
        "body", BODY_PROMPTS, lambda d, v: synthetic_run(d, v, "cancelled", BODY_PROMPTS)
    ),
    "description": Scenario("description", DESCRIPTION_PROMPTS, lambda d, v: description_run(d, v)),
    "description-targetless": Scenario(
        "description", DESCRIPTION_PROMPTS, lambda d, v: targetless_description_run(d, v)
    ),
    "description-failed": Scenario(
        "description",
        DESCRIPTION_PROMPTS,
        lambda d, v: description_run(d, v, state="infrastructure-failed"),
    ),
    "description-not-selected": Scenario(
        "description",
        DESCRIPTION_PROMPTS,
        lambda d, v: synthetic_run(d, v, "not-selected", DESCRIPTION_PROMPTS, "description"),
    ),
    "one-shot": Scenario(
        "description", ["Roll back the payments service."], one_shot_description_run
    ),
}


@dataclass(frozen=True)
class Case:
    name: str
    scenario: str
    expectation: dict[str, Any]
    state: str
    observed: dict[str, Any] = field(default_factory=dict)
    variant: str = "candidate"


def case(
    name: str,
    scenario: str,
    state: str,
    observed: dict[str, Any] | None = None,
    variant: str = "candidate",
    **expectation: Any,
) -> Case:
    return Case(name, scenario, expectation, state, observed or {}, variant)


def text_cases(
    kind: str,
    present: str,
    absent: str,
    equals: tuple[str, str] | None = None,
    seen: dict[str, Any] | None = None,
    missed: dict[str, Any] | None = None,
    **where: Any,
) -> list[Case]:
    """What every text kind grades alike, on the body scenario: `contains` and `not-contains`
    of a text `present` and one `absent`, each passing and failing, and (`equals`: the whole
    text, a part of it) `equals`. `seen` and `missed`: what the passing and the failing
    `contains` observe."""
    matches = [
        ("contains", "pass", "contains", present, seen),
        ("contains-other", "fail", "contains", absent, missed),
        ("not-contains", "pass", "not-contains", absent, None),
        ("not-contains-present", "fail", "not-contains", present, None),
    ]
    if equals is not None:
        matches += [("equals", "pass", "equals", equals[0], None)]
        matches += [("equals-part", "fail", "equals", equals[1], None)]
    return [
        case(name, "body", state, observed, kind=kind, expect=expect, value=value, **where)
        for name, state, expect, value, observed in matches
    ]


SKILL_READ = [
    case(
        "never-read-fails",
        "description",
        "fail",
        kind="skill-read",
        expect="never",
        observed={"targetRead": True, "firstReadTurn": 2, "readTurns": [2]},
    ),
    case(
        "never-targetless-passes",
        "description-targetless",
        "pass",
        variant="baseline",
        kind="skill-read",
        expect="never",
        observed={"targetRead": False, "firstReadTurn": None, "readTurns": []},
    ),
    case("on-turn-2", "description", "pass", kind="skill-read", expect="on-turn", turn=2),
    case("on-turn-1", "description", "fail", kind="skill-read", expect="on-turn", turn=1),
    case("on-turn-one-shot", "one-shot", "pass", kind="skill-read", expect="on-turn", turn=1),
    case("by-turn-2", "description", "pass", kind="skill-read", expect="by-turn", turn=2),
    case("by-turn-3", "description", "pass", kind="skill-read", expect="by-turn", turn=3),
    case("by-turn-1", "description", "fail", kind="skill-read", expect="by-turn", turn=1),
    case(
        "by-turn-targetless",
        "description-targetless",
        "fail",
        variant="baseline",
        kind="skill-read",
        expect="by-turn",
        turn=3,
    ),
    case(
        "not-before-2", "description", "pass", kind="skill-read", expect="not-before-turn", turn=2
    ),
    case(
        "not-before-3", "description", "fail", kind="skill-read", expect="not-before-turn", turn=3
    ),
    case(
        "not-before-targetless",
        "description-targetless",
        "pass",
        variant="baseline",
        kind="skill-read",
        expect="not-before-turn",
        turn=2,
    ),
]

RESOURCE_READ = [
    case(
        "skill-md-read",
        "description",
        "pass",
        kind="resource-read",
        resource="skill",
        index=0,
        path="SKILL.md",
        expect="read",
        observed={"read": True, "turn": None},
    ),
    case(
        "skill-md-read-turn-2",
        "description",
        "pass",
        kind="resource-read",
        resource="skill",
        index=0,
        path="SKILL.md",
        expect="read",
        turn=2,
    ),
    case(
        "skill-md-read-turn-1",
        "description",
        "fail",
        kind="resource-read",
        resource="skill",
        index=0,
        path="SKILL.md",
        expect="read",
        turn=1,
        observed={"read": False, "turn": 1},
    ),
    case(
        "skill-md-not-read-turn-1",
        "description",
        "pass",
        kind="resource-read",
        resource="skill",
        index=0,
        path="SKILL.md",
        expect="not-read",
        turn=1,
    ),
    case(
        "skill-md-not-read",
        "description",
        "fail",
        kind="resource-read",
        resource="skill",
        index=0,
        path="SKILL.md",
        expect="not-read",
    ),
    case(
        "guide-unread-in-description",
        "description",
        "fail",
        kind="resource-read",
        resource="skill",
        index=0,
        path="references/guide.md",
        expect="read",
    ),
    # One-shot description runs carry `turns` too, so reads grade (the reference broke here).
    case(
        "one-shot-skill-read",
        "one-shot",
        "pass",
        kind="resource-read",
        resource="skill",
        index=0,
        path="SKILL.md",
        expect="read",
        turn=1,
    ),
    case(
        "one-shot-workspace-not-read",
        "one-shot",
        "pass",
        kind="resource-read",
        resource="workspace",
        path="README.md",
        expect="not-read",
    ),
    case(
        "one-shot-workspace-read",
        "one-shot",
        "fail",
        kind="resource-read",
        resource="workspace",
        path="README.md",
        expect="read",
    ),
    case(
        "workspace-notes-turn-1",
        "body",
        "pass",
        kind="resource-read",
        resource="workspace",
        path="notes.md",
        expect="read",
        turn=1,
    ),
    case(
        "workspace-notes-turn-2",
        "body",
        "fail",
        kind="resource-read",
        resource="workspace",
        path="notes.md",
        expect="read",
        turn=2,
    ),
    case(
        "workspace-plan-not-read",
        "body",
        "pass",
        kind="resource-read",
        resource="workspace",
        path="plan.md",
        expect="not-read",
    ),
    case(
        "workspace-notes-not-read",
        "body",
        "fail",
        kind="resource-read",
        resource="workspace",
        path="notes.md",
        expect="not-read",
    ),
    case(
        "body-skill-guide",
        "body",
        "pass",
        kind="resource-read",
        resource="skill",
        index=0,
        path="references/guide.md",
        expect="read",
    ),
    case(
        "context-not-read",
        "body",
        "pass",
        kind="resource-read",
        resource="context",
        index=0,
        path="contract.md",
        expect="not-read",
    ),
    case(
        "context-read",
        "body",
        "fail",
        kind="resource-read",
        resource="context",
        index=0,
        path="contract.md",
        expect="read",
    ),
]

PATH = [
    case(
        "result-exists",
        "body",
        "pass",
        kind="path",
        path="result.json",
        expect="exists",
        observed={"path": "result.json", "state": "present", "type": "file", "turn": None},
    ),
    case(
        "directory-exists",
        "body",
        "pass",
        kind="path",
        path="data",
        expect="exists",
        observed={"type": "directory"},
    ),
    case(
        "symlink-exists",
        "body",
        "pass",
        kind="path",
        path="latest.json",
        expect="exists",
        observed={"type": "symlink"},
    ),
    case(
        "result-exists-turn-1",
        "body",
        "fail",
        kind="path",
        path="result.json",
        expect="exists",
        turn=1,
        observed={"state": "missing", "type": None, "turn": 1},
    ),
    case("deleted-absent", "body", "pass", kind="path", path="old.txt", expect="absent"),
    case(
        "deleted-absent-turn-1",
        "body",
        "fail",
        kind="path",
        path="old.txt",
        expect="absent",
        turn=1,
    ),
    case("notes-absent", "body", "fail", kind="path", path="notes.md", expect="absent"),
    case(
        "turn-not-captured",
        "body-unsnapshotted",
        "unavailable",
        kind="path",
        path="result.json",
        expect="exists",
        turn=1,
    ),
]

CHANGED_PATHS = [
    case(
        "equals-final",
        "body",
        "pass",
        kind="changed-paths",
        expect="equals",
        paths=["result.json", "plan.md", "broken.json", "latest.json", "old.txt"],
        observed={"paths": ["broken.json", "latest.json", "old.txt", "plan.md", "result.json"]},
    ),
    case(
        "equals-turn-1",
        "body",
        "pass",
        kind="changed-paths",
        expect="equals",
        paths=["plan.md"],
        turn=1,
        observed={"paths": ["plan.md"], "turn": 1},
    ),
    case(
        "equals-incomplete",
        "body",
        "fail",
        kind="changed-paths",
        expect="equals",
        paths=["plan.md", "result.json"],
    ),
    case("equals-empty", "body", "fail", kind="changed-paths", expect="equals", paths=[], turn=1),
    case(
        "excludes-untouched",
        "body",
        "pass",
        kind="changed-paths",
        expect="excludes",
        paths=["notes.md", "data/config.json"],
    ),
    case(
        "excludes-deleted",
        "body",
        "fail",
        kind="changed-paths",
        expect="excludes",
        paths=["old.txt"],
    ),
    case(
        "excludes-later-file-turn-1",
        "body",
        "pass",
        kind="changed-paths",
        expect="excludes",
        paths=["result.json"],
        turn=1,
    ),
    # Turn changes are cumulative since before the run, so turn 2 still lists plan.md.
    case(
        "excludes-cumulative-turn-2",
        "body",
        "fail",
        kind="changed-paths",
        expect="excludes",
        paths=["plan.md"],
        turn=2,
    ),
    case(
        "turn-not-captured",
        "body-unsnapshotted",
        "unavailable",
        kind="changed-paths",
        expect="equals",
        paths=["plan.md"],
        turn=1,
    ),
]

FILE_TEXT = [
    *text_cases(
        "file-text",
        '"status": "complete"',
        "incomplete",
        seen={"file": "present", "sha256": sha256(RESULT_JSON.encode()), "turn": None},
        path="result.json",
    ),
    # A missing file fails every expect, even not-contains.
    case(
        "not-contains-missing-file",
        "body",
        "fail",
        kind="file-text",
        path="absent.txt",
        expect="not-contains",
        value="x",
        observed={"file": "missing", "sha256": None},
    ),
    case(
        "equals",
        "body",
        "pass",
        kind="file-text",
        path="notes.md",
        expect="equals",
        value="draft\n",
    ),
    case(
        "equals-no-newline",
        "body",
        "fail",
        kind="file-text",
        path="notes.md",
        expect="equals",
        value="draft",
    ),
    case(
        "equals-turn-1",
        "body",
        "pass",
        kind="file-text",
        path="plan.md",
        expect="equals",
        value="1. write result.json\n",
        turn=1,
    ),
    case(
        "contains-before-written",
        "body",
        "fail",
        kind="file-text",
        path="result.json",
        expect="contains",
        value="status",
        turn=1,
        observed={"file": "missing"},
    ),
    case(
        "turn-not-captured",
        "body-unsnapshotted",
        "unavailable",
        kind="file-text",
        path="plan.md",
        expect="contains",
        value="1.",
        turn=1,
    ),
]


def _json(
    name: str,
    state: str,
    expect: str,
    path: str = "result.json",
    observed: dict[str, Any] | None = None,
    **fields: Any,
) -> Case:
    return case(
        name, "body", state, kind="json", path=path, expect=expect, observed=observed, **fields
    )


JSON = [
    _json("available", "pass", "available", observed={"file": "present", "parse": "valid"}),
    _json("available-missing-file", "fail", "available", path="absent.json"),
    _json(
        "missing",
        "pass",
        "missing",
        path="absent.json",
        observed={"file": "missing", "parse": "unavailable", "field": "unavailable"},
    ),
    _json("missing-present-file", "fail", "missing"),
    _json("valid", "pass", "valid"),
    _json("valid-broken", "fail", "valid", path="broken.json"),
    _json("malformed", "pass", "malformed", path="broken.json", observed={"parse": "malformed"}),
    _json("malformed-valid", "fail", "malformed"),
    _json("malformed-missing-file", "fail", "malformed", path="absent.json"),
    _json(
        "present-status",
        "pass",
        "field-present",
        pointer="/status",
        observed={"field": "present", "value": "complete"},
    ),
    _json("present-escaped-slash", "pass", "field-present", pointer="/nested/a~1b"),
    _json("present-escaped-tilde", "pass", "field-present", pointer="/nested/m~0n"),
    _json("present-empty-key", "pass", "field-present", pointer="/nested/"),
    _json("present-index", "pass", "field-present", pointer="/flags/1"),
    _json("present-whole-document", "pass", "field-present", pointer=""),
    _json(
        "present-array-length",
        "fail",
        "field-present",
        pointer="/flags/length",
        observed={"field": "absent"},
    ),
    _json("present-dash", "fail", "field-present", pointer="/flags/-"),
    _json("present-leading-zero", "fail", "field-present", pointer="/flags/01"),
    _json("present-out-of-range", "fail", "field-present", pointer="/flags/2"),
    _json("present-through-scalar", "fail", "field-present", pointer="/status/0"),
    _json(
        "present-malformed-file",
        "fail",
        "field-present",
        path="broken.json",
        pointer="/status",
        observed={"field": "unavailable"},
    ),
    _json("absent-optional", "pass", "field-absent", pointer="/optional"),
    _json("absent-status", "fail", "field-absent", pointer="/status"),
    _json("absent-missing-file", "fail", "field-absent", path="absent.json", pointer="/optional"),
    _json("equals-string", "pass", "field-equals", pointer="/status", value="complete"),
    _json("equals-int-as-float", "pass", "field-equals", pointer="/count", value=3.0),
    _json("equals-float-as-int", "pass", "field-equals", pointer="/ratio", value=1),
    _json("equals-true-is-not-1", "fail", "field-equals", pointer="/flags/0", value=1),
    _json("equals-true", "pass", "field-equals", pointer="/flags/0", value=True),
    _json("equals-null", "pass", "field-equals", pointer="/empty", value=None),
    _json("equals-null-absent-field", "fail", "field-equals", pointer="/optional", value=None),
    _json(
        "equals-object-any-key-order",
        "pass",
        "field-equals",
        pointer="/nested",
        value={"m~n": 2, "": "blank", "a/b": 1},
    ),
    _json("equals-list-order-matters", "fail", "field-equals", pointer="/list", value=["y", "x"]),
    _json("equals-number-is-not-string", "fail", "field-equals", pointer="/count", value="3"),
    case(
        "turn-not-captured",
        "body-unsnapshotted",
        "unavailable",
        kind="json",
        path="plan.md",
        expect="valid",
        turn=1,
    ),
]

RESPONSE_TEXT = [
    *text_cases(
        "response-text",
        "result.json is complete",
        "failed",
        equals=(FINAL_RESPONSE, "Done"),
        seen={"response": FINAL_RESPONSE, "turn": 2},
    ),
    case(
        "turn-1-contains",
        "body",
        "pass",
        kind="response-text",
        expect="contains",
        value="wrote plan.md",
        turn=1,
        observed={"turn": 1},
    ),
    case(
        "turn-1-equals-final",
        "body",
        "fail",
        kind="response-text",
        expect="equals",
        value=FINAL_RESPONSE,
        turn=1,
    ),
]

TOOL_CALL = [
    case(
        "called-read",
        "body",
        "pass",
        kind="tool-call",
        tool="read",
        expect="called",
        observed={
            "callCount": 3,
            "matchingCallCount": 3,
            "succeededCount": 2,
            "failedCount": 1,
            "turn": None,
        },
    ),
    case(
        "called-read-filter",
        "body",
        "pass",
        kind="tool-call",
        tool="read",
        expect="called",
        argumentContains=['"path":"notes.md"'],
        observed={"matchingCallCount": 1},
    ),
    case(
        "called-read-turn-2",
        "body",
        "fail",
        kind="tool-call",
        tool="read",
        expect="called",
        turn=2,
        observed={"callCount": 0},
    ),
    case("called-bash", "body", "fail", kind="tool-call", tool="bash", expect="called"),
    # Arguments are matched in compact JSON (no spaces) without ASCII escaping.
    case(
        "called-non-ascii",
        "body",
        "pass",
        kind="tool-call",
        tool="edit",
        expect="called",
        argumentContains=['"newText":"é"'],
    ),
    case(
        "called-not-contains-all",
        "body",
        "fail",
        kind="tool-call",
        tool="read",
        expect="called",
        argumentNotContains=["guide.md", "notes.md", "missing.txt"],
    ),
    case(
        "succeeded-unit-tests",
        "body",
        "pass",
        kind="tool-call",
        tool="run_command",
        expect="succeeded",
        argumentContains=['{"id":"unit-tests"}'],
    ),
    case(
        "succeeded-spaced-json",
        "body",
        "fail",
        kind="tool-call",
        tool="run_command",
        expect="succeeded",
        argumentContains=['"id": "unit-tests"'],
    ),
    case(
        "succeeded-lint",
        "body",
        "fail",
        kind="tool-call",
        tool="run_command",
        expect="succeeded",
        argumentContains=["lint"],
    ),
    case(
        "succeeded-incomplete",
        "body",
        "fail",
        kind="tool-call",
        tool="edit",
        expect="succeeded",
        observed={"callCount": 1, "succeededCount": 0, "failedCount": 0},
    ),
    case(
        "failed-lint",
        "body",
        "pass",
        kind="tool-call",
        tool="run_command",
        expect="failed",
        argumentContains=["lint"],
        turn=2,
    ),
    case(
        "failed-read",
        "body",
        "pass",
        kind="tool-call",
        tool="read",
        expect="failed",
        argumentContains=["missing.txt"],
    ),
    case(
        "failed-unit-tests",
        "body",
        "fail",
        kind="tool-call",
        tool="run_command",
        expect="failed",
        argumentContains=["unit-tests"],
    ),
    case("failed-incomplete", "body", "fail", kind="tool-call", tool="edit", expect="failed"),
    case("not-called-bash", "body", "pass", kind="tool-call", tool="bash", expect="not-called"),
    case("not-called-write", "body", "fail", kind="tool-call", tool="write", expect="not-called"),
    case(
        "not-called-filtered-turn-1",
        "body",
        "pass",
        kind="tool-call",
        tool="write",
        expect="not-called",
        argumentContains=['"path":"result.json"'],
        turn=1,
    ),
    case(
        "not-called-excluding-plan",
        "body",
        "fail",
        kind="tool-call",
        tool="write",
        expect="not-called",
        argumentNotContains=["plan.md"],
        observed={"callCount": 3, "matchingCallCount": 2},
    ),
    case(
        "not-called-deploy",
        "body",
        "pass",
        kind="tool-call",
        tool="run_command",
        expect="not-called",
        argumentContains=["deploy"],
    ),
]

CONTEXT_TEXT = [
    # No surface given: the system prompt.
    *text_cases(
        "context-text",
        "Use tabs",
        "Use spaces",
        equals=(SYSTEM_PROMPT, "Use tabs"),
        seen={
            "surface": "system-prompt",
            "turn": 2,
            "request": 1,
            "characters": len(SYSTEM_PROMPT),
            "matched": True,
            "preview": SYSTEM_PROMPT[:240],
        },
        missed={"matched": False},
    ),
    case(
        "provider-request-2",
        "body",
        "pass",
        kind="context-text",
        expect="contains",
        value="plan.md",
        surface="provider-context",
        request=2,
        turn=1,
        observed={"turn": 1, "request": 2},
    ),
    case(
        "provider-first-turn-1",
        "body",
        "pass",
        kind="context-text",
        expect="contains",
        value="/skill:target-skill",
        surface="provider-context",
        request="first",
        turn=1,
    ),
    case(
        "provider-last",
        "body",
        "pass",
        kind="context-text",
        expect="equals",
        value=BODY_PROMPTS[1],
        surface="provider-context",
        observed={"turn": 2},
    ),
    case(
        "provider-first-not-contains",
        "body",
        "fail",
        kind="context-text",
        expect="not-contains",
        value="/skill:",
        surface="provider-context",
        request="first",
    ),
    case(
        "no-such-request",
        "body",
        "unavailable",
        kind="context-text",
        expect="contains",
        value="x",
        surface="provider-context",
        request=3,
        turn=1,
    ),
    # The system prompt is observed once per turn and stands for request 1 only.
    case(
        "system-prompt-request-2",
        "body",
        "unavailable",
        kind="context-text",
        expect="contains",
        value="Use tabs",
        request=2,
    ),
    case(
        "no-artifact",
        "body-unobserved",
        "unavailable",
        kind="context-text",
        expect="contains",
        value="Use tabs",
    ),
]

EXPLICIT = [
    *(("skill-read", c) for c in SKILL_READ),
    *(("resource-read", c) for c in RESOURCE_READ),
    *(("path", c) for c in PATH),
    *(("changed-paths", c) for c in CHANGED_PATHS),
    *(("file-text", c) for c in FILE_TEXT),
    *(("json", c) for c in JSON),
    *(("response-text", c) for c in RESPONSE_TEXT),
    *(("tool-call", c) for c in TOOL_CALL),
    *(("context-text", c) for c in CONTEXT_TEXT),
]


def _not_complete_cases() -> list[Case]:
    """Every passing case again, against runs that are not complete: always unavailable."""
    cases: list[Case] = []
    done: set[tuple[str, str]] = set()
    for kind, source in EXPLICIT:
        key = (kind, source.expectation["expect"])
        if source.state != "pass" or key in done:
            continue
        done.add(key)
        family = "body" if source.scenario.startswith("body") else "description"
        variant = source.variant
        for scenario in (
            f"{family}-failed",
            f"{family}-cancelled" if family == "body" else "description-not-selected",
        ):
            cases.append(
                Case(
                    f"{source.name}-{scenario}",
                    scenario,
                    source.expectation,
                    "unavailable",
                    {},
                    variant,
                )
            )
    return cases


ALL = [(kind, c) for kind, c in EXPLICIT] + [
    (c.expectation["kind"], c) for c in _not_complete_cases()
]


@pytest.mark.parametrize(("kind", "example"), ALL, ids=[f"{k}:{c.name}" for k, c in ALL])
def test_kind(kind: str, example: Case, tmp_path: Path) -> None:
    scenario = SCENARIOS[example.scenario]
    other = "baseline" if example.variant == "candidate" else "candidate"
    built = scenario.build(tmp_path, example.variant)
    counterpart = synthetic_run(
        tmp_path, other, "not-selected", scenario.prompts, scenario.group_type
    )
    expectation = {"id": "under-test", "variant": example.variant, **example.expectation}
    definition = group(scenario.group_type, [expectation], scenario.prompts)
    pair = (built, counterpart) if example.variant == "baseline" else (counterpart, built)

    result = grade(definition, *pair)

    check = only_check(result)
    assert check["kind"] == kind
    assert check["variant"] == example.variant
    assert check["state"] == example.state
    assert result["state"] == ("unavailable" if example.state == "unavailable" else "complete")
    if example.state == "unavailable":
        assert check["observed"] is None
    for key, value in example.observed.items():
        assert check["observed"][key] == value, key


def test_every_kind_and_expect_has_pass_fail_and_unavailable_cases() -> None:
    seen: dict[tuple[str, str], set[str]] = {}
    for kind, example in ALL:
        seen.setdefault((kind, example.expectation["expect"]), set()).add(example.state)
    missing = {
        (kind, expect): {"pass", "fail", "unavailable"} - seen.get((kind, expect), set())
        for kind, expects in KIND_EXPECTS.items()
        for expect in expects
    }
    assert {key: states for key, states in missing.items() if states} == {}


def test_resource_read_observes_the_canonical_path(tmp_path: Path) -> None:
    built = description_run(tmp_path)
    counterpart = synthetic_run(
        tmp_path, "baseline", "not-selected", DESCRIPTION_PROMPTS, "description"
    )
    expectation = {
        "id": "skill",
        "kind": "resource-read",
        "variant": "candidate",
        "resource": "skill",
        "index": 0,
        "path": "SKILL.md",
        "expect": "read",
    }

    check = only_check(
        grade(group("description", [expectation], DESCRIPTION_PROMPTS), counterpart, built)
    )

    assert check["observed"]["path"] == os.path.realpath(
        built.run_dir / "resources" / "skills" / "0" / "SKILL.md"
    )
    assert check["observed"]["path"] == built.run["resources"]["targetPath"]
    assert check["expected"] == {
        "expect": "read",
        "resource": "skill",
        "index": 0,
        "path": "SKILL.md",
        "turn": None,
    }


def _one_turn_body(tmp_path: Path, **options: Any) -> tuple[Built, Built]:
    prompts = ["Write out.txt."]
    turn = Turn(
        prompt=prompts[0],
        response="Wrote out.txt.",
        calls=[Call("write", {"path": "out.txt", "content": "done\n"})],
    )
    built = build_variant(tmp_path, "candidate", [turn], one_shot=True, **options)
    return synthetic_run(tmp_path, "baseline", "not-selected", prompts), built


@pytest.mark.parametrize("snapshot_turns", [True, False])
def test_one_turn_body_grades_turn_1_from_the_final_workspace(
    tmp_path: Path, snapshot_turns: bool
) -> None:
    # A one-turn run ends with its only turn, so an uncaptured turn 1 is the final state.
    baseline, built = _one_turn_body(tmp_path, snapshot_turns=snapshot_turns)
    expectation = {
        "id": "out",
        "kind": "path",
        "variant": "candidate",
        "path": "out.txt",
        "expect": "exists",
        "turn": 1,
    }

    check = only_check(grade(group("body", [expectation], ["Write out.txt."]), baseline, built))

    assert check["state"] == "pass"
    assert (built.run["turns"][0]["workspace"] is None) is (not snapshot_turns)


def test_file_text_decodes_invalid_utf8_lossily(tmp_path: Path) -> None:
    baseline, built = _one_turn_body(tmp_path, fixture={"raw.txt": b"caf\xe9 ok\n"})
    expectation = {
        "id": "raw",
        "kind": "file-text",
        "variant": "candidate",
        "path": "raw.txt",
        "expect": "equals",
        "value": "caf\ufffd ok\n",
    }

    check = only_check(grade(group("body", [expectation], ["Write out.txt."]), baseline, built))

    assert check["state"] == "pass"
    assert check["observed"]["sha256"] == sha256(b"caf\xe9 ok\n")


def test_context_text_counts_utf16_and_previews_without_splitting_pairs(tmp_path: Path) -> None:
    text = "a" * 239 + "😀" + "tail ✅"
    observation = {
        "timestamp": "2026-11-30T21:11:52.000Z",
        "turn": 1,
        "kind": "context",
        "surface": "system-prompt",
        "prompt": "Write out.txt.",
        "characters": 247,
        "text": text,
    }
    baseline, built = _one_turn_body(tmp_path, observations=[observation])
    expectation = {
        "id": "ctx",
        "kind": "context-text",
        "variant": "candidate",
        "expect": "contains",
        "value": "😀tail",
    }

    check = only_check(grade(group("body", [expectation], ["Write out.txt."]), baseline, built))

    assert check["state"] == "pass"
    assert check["observed"]["characters"] == 247  # 239 + 2 (surrogate pair) + 6
    assert check["observed"]["preview"] == "a" * 239
    assert check["observed"]["sha256"] == sha256(text.encode())
