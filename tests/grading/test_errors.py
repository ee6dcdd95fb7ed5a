"""Grade-time errors: tampered or unsafe evidence and malformed expectations become grade-error
entries; nothing raises."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_skill_eval.grading import grade_group
from tests.grading.grading_evidence import Built, fingerprint, grade, group, sha256, synthetic_run
from tests.grading.grading_scenarios import (
    BODY_PROMPTS,
    DESCRIPTION_PROMPTS,
    body_run,
    description_run,
    one_shot_description_run,
)

CHANGED = "context observation artifact changed after run persistence"


def grade_one(built: Built, expectation: dict[str, Any], group_type: str = "body") -> Any:
    """Grade one candidate expectation against `built` with a not-selected baseline."""
    prompts = BODY_PROMPTS if group_type == "body" else DESCRIPTION_PROMPTS
    baseline = synthetic_run(
        built.run_dir.parent.parent.parent.parent, "baseline", "not-selected", prompts, group_type
    )
    full = {"id": "under-test", "variant": "candidate", **expectation}
    return grade(group(group_type, [full], prompts), baseline, built)


def assert_error(result: Any, reason: str, error_id: str | None = "under-test") -> None:
    assert result["state"] == "grade-error"
    assert result["checks"] == []
    assert result["errors"] == [{"id": error_id, "reason": reason}]


FILE_TEXT = {"kind": "file-text", "path": "result.json", "expect": "contains", "value": "x"}


# -- tampered and unsafe workspace evidence ------------------------------------------------


@pytest.mark.parametrize("kind", ["file-text", "json"])
def test_modified_workspace_file(tmp_path: Path, kind: str) -> None:
    built = body_run(tmp_path)
    (built.run_dir / "workspace" / "result.json").write_text('{"status": "forged"}\n')
    expect = "contains" if kind == "file-text" else "valid"

    result = grade_one(built, {**FILE_TEXT, "kind": kind, "expect": expect})

    assert_error(result, "workspace evidence changed after capture: result.json")


def test_modified_turn_snapshot_file(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    (built.run_dir / "turns" / "1" / "workspace" / "plan.md").write_text("forged\n")

    result = grade_one(built, {**FILE_TEXT, "path": "plan.md", "turn": 1})

    assert_error(result, "workspace evidence changed after capture: plan.md")


def test_deleted_workspace_file(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    (built.run_dir / "workspace" / "result.json").unlink()

    assert_error(
        grade_one(built, FILE_TEXT), "workspace evidence changed after capture: result.json"
    )


def test_file_swapped_for_a_symlink_with_the_same_bytes(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    captured = built.run_dir / "workspace" / "result.json"
    outside = tmp_path / "outside.json"
    outside.write_bytes(captured.read_bytes())
    captured.unlink()
    captured.symlink_to(outside)

    assert_error(grade_one(built, FILE_TEXT), "file assertion requires a regular file: result.json")


@pytest.mark.parametrize("path", ["latest.json", "data"])
def test_file_assertion_on_a_symlink_or_directory(tmp_path: Path, path: str) -> None:
    result = grade_one(body_run(tmp_path), {**FILE_TEXT, "path": path})

    assert_error(result, f"file assertion requires a regular file: {path}")


def test_file_reached_through_a_planted_directory_link_escapes(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (built.run_dir / "workspace" / "link").symlink_to(outside)
    # The fingerprint claims a regular file where the subject planted a link.
    run = copy.deepcopy(built.run)
    digest = sha256(b"secret\n")
    run["effects"]["after"].append({"path": "link/secret.txt", "type": "file", "sha256": digest})
    tampered = Built(run, built.run_dir, built.sha256)

    result = grade_one(tampered, {**FILE_TEXT, "path": "link/secret.txt"})

    assert_error(result, "workspace file escapes its workspace: link/secret.txt")


def test_resource_read_through_a_planted_link_escapes(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (built.run_dir / "workspace" / "link").symlink_to(outside)

    result = grade_one(
        built,
        {
            "kind": "resource-read",
            "resource": "workspace",
            "path": "link/secret.txt",
            "expect": "not-read",
        },
    )

    assert_error(result, "resource-read path escapes its declared root")


@pytest.mark.parametrize(
    ("expectation", "reason"),
    [
        (
            {"resource": "skill", "index": 3, "path": "SKILL.md"},
            "declared resource is unavailable: skill 3",
        ),
        (
            {"resource": "context", "index": 1, "path": "contract.md"},
            "declared resource is unavailable: context 1",
        ),
        (
            {"resource": "skill", "index": 0, "path": "NOT-THERE.md"},
            "declared resource path is unavailable: NOT-THERE.md",
        ),
        (
            {"resource": "workspace", "path": "never/existed.txt"},
            "declared workspace resource path is unavailable: never/existed.txt",
        ),
    ],
)
def test_resource_read_unknown_resource(
    tmp_path: Path, expectation: dict[str, Any], reason: str
) -> None:
    result = grade_one(
        body_run(tmp_path), {"kind": "resource-read", "expect": "read", **expectation}
    )

    assert_error(result, reason)


def test_workspace_resource_read_then_deleted_is_known(tmp_path: Path) -> None:
    # The run read notes.md; even when the fingerprints do not list it, the read proves it.
    built = body_run(tmp_path)
    run = copy.deepcopy(built.run)
    for name in ("before", "after"):
        run["effects"][name] = [e for e in run["effects"][name] if e["path"] != "notes.md"]

    result = grade_one(
        Built(run, built.run_dir, built.sha256),
        {"kind": "resource-read", "resource": "workspace", "path": "notes.md", "expect": "read"},
    )

    assert result["errors"] == []
    assert result["checks"][0]["state"] == "pass"


# -- tampered and unsafe context evidence --------------------------------------------------

CONTEXT_TEXT = {"kind": "context-text", "expect": "contains", "value": "Use tabs"}


def test_appended_context_artifact(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    with (built.run_dir / "context-observations.jsonl").open("a") as artifact:
        artifact.write('{"turn": 2, "surface": "system-prompt", "text": "forged"}\n')

    assert_error(grade_one(built, CONTEXT_TEXT), CHANGED)


def test_deleted_context_artifact(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    (built.run_dir / "context-observations.jsonl").unlink()

    assert_error(grade_one(built, CONTEXT_TEXT), CHANGED)


@pytest.mark.parametrize("path", ["../baseline/run.json", "/etc/hostname", ".", "workspace/.."])
def test_context_artifact_path_outside_the_run(tmp_path: Path, path: str) -> None:
    built = body_run(tmp_path)
    run = copy.deepcopy(built.run)
    run["contextObservationArtifact"]["path"] = path

    result = grade_one(Built(run, built.run_dir, built.sha256), CONTEXT_TEXT)

    assert_error(result, f"context observation artifact escapes its run directory: {path}")


@pytest.mark.parametrize(
    ("line", "problem"),
    [("{not json", "is not valid JSON"), ("[1, 2]", "must be an object")],
)
def test_malformed_context_line_with_matching_hash(tmp_path: Path, line: str, problem: str) -> None:
    built = body_run(tmp_path)
    artifact = built.run_dir / "context-observations.jsonl"
    data = artifact.read_bytes() + line.encode() + b"\n"
    artifact.write_bytes(data)
    run = copy.deepcopy(built.run)
    run["contextObservationArtifact"]["sha256"] = sha256(data)
    number = data.count(b"\n")

    result = grade_one(Built(run, built.run_dir, built.sha256), CONTEXT_TEXT)

    prefix = "" if problem.startswith("is") else "run evidence is malformed: "
    assert_error(result, f"{prefix}context observation line {number} {problem}")


# -- malformed run evidence ----------------------------------------------------------------


def _mutate(built: Built, path: list[Any], value: Any) -> Built:
    run = copy.deepcopy(built.run)
    target = run
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return Built(run, built.run_dir, built.sha256)


_DELETE = object()

BAD_SHAPES = [
    (
        "turns-not-array",
        ["turns"],
        "x",
        {"kind": "response-text", "expect": "contains", "value": "x", "turn": 1},
        "run evidence is malformed: turns must be an array",
    ),
    (
        "turn-not-object",
        ["turns", 0],
        5,
        {"kind": "response-text", "expect": "contains", "value": "x", "turn": 1},
        "run evidence is malformed: turns[0] must be an object",
    ),
    (
        "response-not-string",
        ["response"],
        None,
        {"kind": "response-text", "expect": "contains", "value": "x"},
        "run evidence is malformed: response must be a string",
    ),
    (
        "after-not-array",
        ["effects", "after"],
        None,
        {"kind": "path", "path": "result.json", "expect": "exists"},
        "run evidence is malformed: effects.after must be an array",
    ),
    (
        "fingerprint-entry",
        ["effects", "after", 0, "path"],
        1,
        {"kind": "path", "path": "result.json", "expect": "exists"},
        "run evidence is malformed: effects.after[0].path must be a string",
    ),
    (
        "changes-missing",
        ["effects", "changes", "deleted"],
        _DELETE,
        {"kind": "changed-paths", "paths": [], "expect": "equals"},
        "run evidence is malformed: effects.changes.deleted must be an array",
    ),
    (
        "snapshot-files",
        ["turns", 0, "workspace", "files"],
        {},
        {"kind": "path", "path": "plan.md", "expect": "exists", "turn": 1},
        "run evidence is malformed: turn 1 workspace.files must be an array",
    ),
    (
        "tool-activity-missing",
        ["turns", 1, "toolActivity"],
        _DELETE,
        {"kind": "tool-call", "tool": "read", "expect": "called", "turn": 2},
        "run evidence is malformed: turn 2 toolActivity must be an array",
    ),
    (
        "read-paths",
        ["turns", 0, "successfulReadPaths"],
        [1],
        {"kind": "resource-read", "resource": "workspace", "path": "notes.md", "expect": "read"},
        "run evidence is malformed: turn 1 successfulReadPaths must contain only strings",
    ),
    (
        "context-artifact",
        ["contextObservationArtifact"],
        "context-observations.jsonl",
        CONTEXT_TEXT,
        "run evidence is malformed: contextObservationArtifact must be an object",
    ),
    (
        "workspace-missing",
        ["workspace"],
        _DELETE,
        {"kind": "path", "path": "result.json", "expect": "exists"},
        "run evidence is malformed: workspace must be a string",
    ),
    (
        "state-missing",
        ["state"],
        _DELETE,
        {"kind": "path", "path": "result.json", "expect": "exists"},
        "run evidence is malformed: the candidate run has no state",
    ),
]


@pytest.mark.parametrize(
    ("path", "value", "expectation", "reason"),
    [case[1:] for case in BAD_SHAPES],
    ids=[case[0] for case in BAD_SHAPES],
)
def test_malformed_run_evidence(
    tmp_path: Path, path: list[Any], value: Any, expectation: dict[str, Any], reason: str
) -> None:
    result = grade_one(_mutate(body_run(tmp_path), path, value), expectation)

    assert_error(result, reason)


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        (["activation", "readTurns"], "2", "activation.readTurns must be an array"),
        (["activation", "firstReadTurn"], "2", "activation turns must be integers"),
        (["activation", "targetRead"], "yes", "activation.targetRead must be a boolean"),
        (["activation"], None, "activation must be an object"),
    ],
)
def test_malformed_activation(tmp_path: Path, path: list[Any], value: Any, reason: str) -> None:
    built = _mutate(description_run(tmp_path), path, value)

    result = grade_one(built, {"kind": "skill-read", "expect": "by-turn", "turn": 2}, "description")

    assert_error(result, f"run evidence is malformed: {reason}")


# -- malformed expectations ----------------------------------------------------------------

INVALID = [
    ({"kind": "telepathy", "expect": "x"}, "unsupported expectation kind: telepathy"),
    ({"expect": "exists", "path": "a"}, "unsupported expectation kind: None"),
    (
        {"kind": "path", "variant": "both", "path": "a", "expect": "exists"},
        "invalid path expectation: variant must be baseline or candidate",
    ),
    (
        {"kind": "skill-read", "expect": "never"},
        "invalid skill-read expectation: skill-read needs a description group",
    ),
    (
        {"kind": "path", "path": "a", "expect": "present"},
        "invalid path expectation: expect must be one of exists, absent",
    ),
    (
        {"kind": "path", "path": "a", "expect": "exists", "turn": 0},
        "invalid path expectation: turn must be an integer from 1 to 2",
    ),
    (
        {"kind": "path", "path": "a", "expect": "exists", "turn": 3},
        "invalid path expectation: turn must be an integer from 1 to 2",
    ),
    (
        {"kind": "path", "path": "a", "expect": "exists", "turn": True},
        "invalid path expectation: turn must be an integer from 1 to 2",
    ),
    (
        {"kind": "path", "path": "a", "expect": "exists", "turn": "1"},
        "invalid path expectation: turn must be an integer from 1 to 2",
    ),
    (
        {"kind": "path", "path": "a", "expect": "exists", "extra": 1},
        "invalid path expectation: unsupported field extra",
    ),
    (
        {"kind": "file-text", "path": "a", "expect": "contains"},
        "invalid file-text expectation: value must be a string",
    ),
    (
        {"kind": "file-text", "path": "a", "expect": "contains", "value": 3},
        "invalid file-text expectation: value must be a string",
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "field-present"},
        "invalid json expectation: pointer is required when expect is field-present",
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "field-present", "pointer": "status"},
        "invalid json expectation: pointer 'status': a JSON pointer must be empty or start "
        "with '/'",
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "valid", "pointer": "/~2"},
        "invalid json expectation: pointer '/~2': '~' in a JSON pointer must be followed by 0 or 1",
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "field-absent", "pointer": 5},
        "invalid json expectation: pointer must be a string",
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "field-equals", "pointer": "/a"},
        "invalid json expectation: value is required when expect is field-equals (it may be null)",
    ),
    (
        {"kind": "changed-paths", "expect": "equals", "paths": ["a", "a"]},
        "invalid changed-paths expectation: paths must not repeat a path",
    ),
    (
        {"kind": "changed-paths", "expect": "equals", "paths": "a"},
        "invalid changed-paths expectation: paths must be an array of relative paths",
    ),
    (
        {"kind": "changed-paths", "expect": "excludes", "paths": ["../a"]},
        "invalid changed-paths expectation: paths must be an array of relative paths",
    ),
    (
        {"kind": "tool-call", "tool": "", "expect": "called"},
        "invalid tool-call expectation: tool must be a non-empty string",
    ),
    (
        {"kind": "tool-call", "tool": "read", "expect": "called", "argumentContains": "x"},
        "invalid tool-call expectation: argumentContains must be an array of strings",
    ),
    (
        {"kind": "tool-call", "tool": "read", "expect": "called", "argumentContain": ["x"]},
        "invalid tool-call expectation: unsupported field argumentContain",
    ),
    (
        {"kind": "context-text", "expect": "contains", "value": "x", "surface": "user"},
        "invalid context-text expectation: surface must be one of system-prompt, provider-context",
    ),
    (
        {"kind": "context-text", "expect": "contains", "value": "x", "request": 0},
        "invalid context-text expectation: request must be first, last or a positive integer",
    ),
    (
        {"kind": "context-text", "expect": "contains", "value": "x", "request": True},
        "invalid context-text expectation: request must be first, last or a positive integer",
    ),
    (
        {"kind": "context-text", "expect": "contains", "value": "x", "request": "middle"},
        "invalid context-text expectation: request must be first, last or a positive integer",
    ),
    (
        {
            "kind": "resource-read",
            "resource": "workspace",
            "index": 0,
            "path": "a",
            "expect": "read",
        },
        "invalid resource-read expectation: index must be omitted for workspace resources",
    ),
    (
        {"kind": "resource-read", "resource": "skill", "path": "SKILL.md", "expect": "read"},
        "invalid resource-read expectation: index must be a non-negative integer for skill "
        "resources",
    ),
    (
        {
            "kind": "resource-read",
            "resource": "context",
            "index": -1,
            "path": "a",
            "expect": "read",
        },
        "invalid resource-read expectation: index must be a non-negative integer for context "
        "resources",
    ),
    (
        {
            "kind": "resource-read",
            "resource": "skill",
            "index": False,
            "path": "a",
            "expect": "read",
        },
        "invalid resource-read expectation: index must be a non-negative integer for skill "
        "resources",
    ),
    (
        {"kind": "resource-read", "resource": "fixture", "path": "a", "expect": "read"},
        "invalid resource-read expectation: resource must be one of workspace, skill, context",
    ),
]


@pytest.mark.parametrize(("expectation", "reason"), INVALID, ids=[r for _, r in INVALID])
def test_invalid_body_expectation(tmp_path: Path, expectation: dict[str, Any], reason: str) -> None:
    assert_error(grade_one(body_run(tmp_path), expectation), reason)


@pytest.mark.parametrize(
    "path", ["../x", "/etc/passwd", "a\\b", "a//b", "./a", "a/.", "", "a/", "a\0b", 7]
)
def test_unsafe_expectation_path(tmp_path: Path, path: object) -> None:
    result = grade_one(body_run(tmp_path), {"kind": "path", "path": path, "expect": "exists"})

    assert_error(
        result,
        "invalid path expectation: path must be a relative path with no '.', '..' or empty parts",
    )


@pytest.mark.parametrize(
    ("expectation", "reason"),
    [
        (
            {"kind": "path", "path": "a", "expect": "exists"},
            "invalid path expectation: path needs a body group",
        ),
        (
            {"kind": "context-text", "expect": "contains", "value": "x"},
            "invalid context-text expectation: context-text needs a body group",
        ),
        (
            {"kind": "skill-read", "expect": "never", "turn": None},
            "invalid skill-read expectation: turn must be omitted when expect is never",
        ),
        (
            {"kind": "skill-read", "expect": "on-turn"},
            "invalid skill-read expectation: turn must be an integer from 1 to 3",
        ),
        (
            {"kind": "skill-read", "expect": "by-turn", "turn": 4},
            "invalid skill-read expectation: turn must be an integer from 1 to 3",
        ),
    ],
)
def test_invalid_description_expectation(
    tmp_path: Path, expectation: dict[str, Any], reason: str
) -> None:
    result = grade_one(description_run(tmp_path), expectation, "description")

    assert_error(result, reason)


def test_errors_name_the_expectation_and_other_checks_still_grade(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    baseline = synthetic_run(tmp_path, "baseline", "not-selected", BODY_PROMPTS)
    expectations: list[Any] = [
        {
            "id": "good",
            "kind": "path",
            "variant": "candidate",
            "path": "plan.md",
            "expect": "exists",
        },
        {"id": "good", "kind": "path", "variant": "candidate", "path": "x", "expect": "exists"},
        "not an object",
        {"kind": "path", "variant": "candidate", "path": "x", "expect": "exists"},
    ]

    result = grade(group("body", expectations, BODY_PROMPTS), baseline, built)

    assert result["state"] == "grade-error"
    assert [c["id"] for c in result["checks"]] == ["good"]
    assert result["errors"] == [
        {"id": "good", "reason": "duplicate expectation id: good"},
        {"id": None, "reason": "expectation must be an object"},
        {"id": None, "reason": "expectation id must be a non-empty string"},
    ]


# -- the grade document and its guarantees -------------------------------------------------


def test_grade_document_binds_the_run_bytes(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    baseline = body_run(tmp_path, "baseline")
    expectations = [
        {
            "id": "plan",
            "kind": "path",
            "variant": "candidate",
            "path": "plan.md",
            "expect": "exists",
        }
    ]

    result = grade(group("body", expectations, BODY_PROMPTS), baseline, built)

    assert set(result) == {"schema_version", "state", "evidence", "checks", "comparisons", "errors"}
    assert result["schema_version"] == 1
    for variant, run in (("baseline", baseline), ("candidate", built)):
        evidence = result["evidence"][variant]
        assert evidence["path"] == str(run.run_dir / "run.json")
        assert evidence["sha256"] == sha256(Path(evidence["path"]).read_bytes())
    assert result["checks"] == [
        {
            "id": "plan",
            "kind": "path",
            "variant": "candidate",
            "state": "pass",
            "expected": {"expect": "exists", "path": "plan.md", "turn": None},
            "observed": {"path": "plan.md", "state": "present", "type": "file", "turn": None},
        }
    ]
    json.dumps(result, allow_nan=False)  # the document is plain JSON


def test_grading_reads_but_never_changes_evidence(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    baseline = body_run(tmp_path, "baseline")
    before = fingerprint(tmp_path)
    expectations = [
        {
            "id": "text",
            "kind": "file-text",
            "variant": "candidate",
            "path": "result.json",
            "expect": "contains",
            "value": "complete",
            "turn": 2,
        },
        {
            "id": "context",
            "kind": "context-text",
            "variant": "baseline",
            "expect": "contains",
            "value": "Use tabs",
            "surface": "provider-context",
            "request": "first",
        },
    ]

    result = grade(group("body", expectations, BODY_PROMPTS), baseline, built)

    assert [c["state"] for c in result["checks"]] == ["pass", "fail"]
    assert fingerprint(tmp_path) == before


def test_no_expectations_is_complete(tmp_path: Path) -> None:
    built = description_run(tmp_path)
    baseline = synthetic_run(
        tmp_path, "baseline", "not-selected", DESCRIPTION_PROMPTS, "description"
    )

    result = grade(group("description", [], DESCRIPTION_PROMPTS), baseline, built)

    assert (result["state"], result["checks"], result["errors"]) == ("complete", [], [])


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ({}, "group.type must be description or body"),
        ({"type": "body", "expectations": "all"}, "group.expectations must be an array"),
        (
            {"type": "body", "expectations": [], "input": {"turns": []}},
            "group.input must hold a prompt or a non-empty turns array",
        ),
    ],
)
def test_unusable_definition_is_a_system_error(
    tmp_path: Path, definition: dict[str, Any], message: str
) -> None:
    built = one_shot_description_run(tmp_path)

    result = grade_group(
        definition,
        {"candidate": built.run},
        {"candidate": built.run_dir},
        {"candidate": built.sha256},
    )

    assert result["state"] == "grade-error"
    assert result["checks"] == []
    assert result["comparisons"] == []
    assert result["evidence"]["candidate"] == {
        "path": str(built.run_dir / "run.json"),
        "sha256": built.sha256,
    }
    assert result["evidence"]["baseline"] == {"path": None, "sha256": None}
    assert result["errors"] == [
        {"id": None, "reason": "baseline run.json evidence is not identified"},
        {"id": None, "reason": f"deterministic grading failed: {message}"},
    ]


def test_missing_run_is_an_error_for_its_expectations(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    expectations = [
        {"id": "b", "kind": "path", "variant": "baseline", "path": "a", "expect": "exists"},
        {"id": "c", "kind": "path", "variant": "candidate", "path": "plan.md", "expect": "exists"},
    ]
    runs: dict[str, Any] = {"baseline": None, "candidate": built.run}

    result = grade_group(
        group("body", expectations, BODY_PROMPTS),
        runs,
        {"baseline": tmp_path, "candidate": built.run_dir},
        {"baseline": "0" * 64, "candidate": built.sha256},
    )

    assert result["errors"] == [
        {"id": "b", "reason": "run evidence is malformed: the baseline run has no state"}
    ]
    assert [c["state"] for c in result["checks"]] == ["pass"]


# -- fuzz: arbitrary expectations never escape as exceptions -------------------------------

KINDS = [
    "skill-read",
    "resource-read",
    "path",
    "changed-paths",
    "file-text",
    "json",
    "response-text",
    "tool-call",
    "context-text",
    "other",
]
FIELDS = [
    "expect",
    "turn",
    "path",
    "paths",
    "value",
    "pointer",
    "resource",
    "index",
    "tool",
    "argumentContains",
    "argumentNotContains",
    "surface",
    "request",
    "comparison",
]
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 5)
    | st.floats(allow_nan=False)
    | st.sampled_from(
        [
            "",
            "/",
            "/status",
            "~",
            "result.json",
            "../x",
            "exists",
            "contains",
            "read",
            "skill",
            "workspace",
            "called",
            "first",
            "field-equals",
            "x",
        ]
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
EXPECTATIONS = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.sampled_from(["a", "b", "c"]),
            "kind": st.sampled_from(KINDS),
            "variant": st.sampled_from(["baseline", "candidate", "other"]),
        },
        optional=dict.fromkeys(FIELDS, JSON_VALUES),
    ),
    max_size=4,
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Built, Built]:
    root = tmp_path_factory.mktemp("fuzz")
    return body_run(root, "baseline", write_result=False), body_run(root, "candidate")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expectations=EXPECTATIONS, group_type=st.sampled_from(["body", "description"]))
def test_fuzzed_expectations_never_raise(
    recorded: tuple[Built, Built], expectations: list[dict[str, Any]], group_type: str
) -> None:
    result = grade(group(group_type, expectations, BODY_PROMPTS), *recorded)

    assert result["state"] in {"complete", "unavailable", "grade-error"}
    assert not any(e["reason"].startswith("deterministic grading failed") for e in result["errors"])
    graded = {c["id"] for c in result["checks"]} | {e["id"] for e in result["errors"]}
    assert {e["id"] for e in expectations} <= graded
    assert all(c["state"] in {"pass", "fail", "unavailable"} for c in result["checks"])
    json.dumps(result)
