"""Grade-time errors: tampered or unsafe evidence and malformed expectations become grade-error
entries; nothing raises."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pytest_skill_eval.definitions import EXPECTATION_KINDS, DefinitionError, parse_group
from pytest_skill_eval.grading import grade_group
from pytest_skill_eval.grading.core import parse_expectation
from pytest_skill_eval.grading.support import ExpectationError
from pytest_skill_eval.hosts.registry import registered
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
    if kind == "file-text":
        expectation = FILE_TEXT
    else:
        expectation = {"kind": "json", "path": "result.json", "expect": "valid"}

    result = grade_one(built, expectation)

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


def invalid(kind: str | None, field: str, message: str) -> str:
    """The grade-error reason of expectation 0, worded as the load-time definition error."""
    label = "invalid expectation" if kind is None else f"invalid {kind} expectation"
    return f"{label}: /expectations/0/{field}: {message}"


CONTAINED = (
    "must be a contained relative path without empty, '.' or '..' segments (and no leading, "
    "trailing or doubled '/'), e.g. 'dir/file'"
)
POINTER = (
    "must be a JSON Pointer (RFC 6901): \"\" for the whole document or '/'-prefixed segments, "
    "with '~' only as '~0' or '~1'"
)
REQUEST = 'must be "first", "last" or a positive integer'

INVALID = [
    (
        {"kind": "telepathy", "expect": "x"},
        invalid(
            None,
            "kind",
            'unknown expectation kind "telepathy"; use one of: ' + ", ".join(EXPECTATION_KINDS),
        ),
    ),
    (
        {"expect": "exists", "path": "a"},
        invalid(
            None,
            "kind",
            "missing required field 'kind'; use one of: " + ", ".join(EXPECTATION_KINDS),
        ),
    ),
    (
        {"kind": "path", "variant": "both", "path": "a", "expect": "exists"},
        invalid("path", "variant", "must be 'baseline' or 'candidate' (got \"both\")"),
    ),
    (
        {"kind": "skill-read", "expect": "never"},
        invalid(
            "skill-read",
            "kind",
            "'skill-read' expectations are only valid in description groups; in a body group the "
            "target is delivered explicitly (use resource-read to observe reads)",
        ),
    ),
    (
        {"kind": "path", "path": "a", "expect": "present"},
        invalid("path", "expect", "must be 'exists' or 'absent' (got \"present\")"),
    ),
    (
        {"kind": "path", "path": "a", "expect": "exists", "turn": 0},
        invalid("path", "turn", "must be at least 1 (got 0)"),
    ),
    (
        {"kind": "path", "path": "a", "expect": "exists", "turn": 3},
        invalid("path", "turn", "turn 3 is out of range: the group declares 2 turns (use 1..2)"),
    ),
    (
        {"kind": "path", "path": "a", "expect": "exists", "turn": True},
        invalid("path", "turn", "must be an integer (got true)"),
    ),
    (
        {"kind": "path", "path": "a", "expect": "exists", "turn": "1"},
        invalid("path", "turn", 'must be an integer (got "1")'),
    ),
    (
        {"kind": "path", "path": "a", "expect": "exists", "extra": 1},
        invalid(
            "path",
            "extra",
            "unknown field 'extra' in a 'path' expectation; remove it or use one of: id, "
            "variant, comparison, turn, kind, path, expect",
        ),
    ),
    (
        {"kind": "file-text", "path": "a", "expect": "contains"},
        invalid("file-text", "value", "missing required field 'value'"),
    ),
    (
        {"kind": "file-text", "path": "a", "expect": "contains", "value": 3},
        invalid("file-text", "value", "must be a string (got 3)"),
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "field-present"},
        invalid(
            "json",
            "pointer",
            "expect 'field-present' needs 'pointer', a JSON Pointer such as \"/status\"",
        ),
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "field-present", "pointer": "status"},
        invalid("json", "pointer", f'{POINTER} (got "status")'),
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "valid", "pointer": "/~2"},
        invalid("json", "pointer", f'{POINTER} (got "/~2")'),
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "field-absent", "pointer": 5},
        invalid("json", "pointer", "must be a string (got 5)"),
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "field-equals", "pointer": "/a"},
        invalid("json", "value", "expect 'field-equals' needs a 'value' key (null is allowed)"),
    ),
    (
        {"kind": "json", "path": "a.json", "expect": "valid", "value": 1},
        invalid(
            "json", "value", "'value' is only used by expect 'field-equals', not 'valid'; remove it"
        ),
    ),
    (
        {"kind": "changed-paths", "expect": "equals", "paths": ["a", "a"]},
        invalid(
            "changed-paths",
            "paths/1",
            'duplicate path "a" (already at index 0); list each only once',
        ),
    ),
    (
        {"kind": "changed-paths", "expect": "equals", "paths": "a"},
        invalid("changed-paths", "paths", 'must be an array (got "a")'),
    ),
    (
        {"kind": "changed-paths", "expect": "excludes", "paths": ["../a"]},
        invalid("changed-paths", "paths/0", f'{CONTAINED} (got "../a")'),
    ),
    (
        {"kind": "tool-call", "tool": "", "expect": "called"},
        invalid("tool-call", "tool", "must not be empty or only whitespace"),
    ),
    (
        {"kind": "tool-call", "tool": "read", "expect": "called", "argumentContains": "x"},
        invalid("tool-call", "argumentContains", 'must be an array (got "x")'),
    ),
    (
        {"kind": "tool-call", "tool": "read", "expect": "called", "argumentContain": ["x"]},
        invalid(
            "tool-call",
            "argumentContain",
            "unknown field 'argumentContain' in a 'tool-call' expectation; did you mean "
            "'argumentContains'?",
        ),
    ),
    (
        {"kind": "context-text", "expect": "contains", "value": "x", "surface": "user"},
        invalid(
            "context-text",
            "surface",
            "must be 'system-prompt' or 'provider-context' (got \"user\")",
        ),
    ),
    (
        {"kind": "context-text", "expect": "contains", "value": "x", "request": 0},
        invalid("context-text", "request", f"{REQUEST} (got 0)"),
    ),
    (
        {"kind": "context-text", "expect": "contains", "value": "x", "request": True},
        invalid("context-text", "request", f"{REQUEST} (got true)"),
    ),
    (
        {"kind": "context-text", "expect": "contains", "value": "x", "request": "middle"},
        invalid("context-text", "request", f'{REQUEST} (got "middle")'),
    ),
    (
        {
            "kind": "resource-read",
            "resource": "workspace",
            "index": 0,
            "path": "a",
            "expect": "read",
        },
        invalid("resource-read", "index", "a workspace resource-read takes no 'index'; remove it"),
    ),
    (
        {"kind": "resource-read", "resource": "skill", "path": "SKILL.md", "expect": "read"},
        invalid(
            "resource-read",
            "index",
            "a skill resource-read needs 'index', the zero-based position in the variant's "
            "'skills' list",
        ),
    ),
    (
        {
            "kind": "resource-read",
            "resource": "context",
            "index": -1,
            "path": "a",
            "expect": "read",
        },
        invalid("resource-read", "index", "must be at least 0 (got -1)"),
    ),
    (
        {
            "kind": "resource-read",
            "resource": "skill",
            "index": False,
            "path": "a",
            "expect": "read",
        },
        invalid("resource-read", "index", "must be an integer (got false)"),
    ),
    (
        {"kind": "resource-read", "resource": "fixture", "path": "a", "expect": "read"},
        invalid(
            "resource-read",
            "resource",
            "must be 'workspace', 'skill' or 'context' (got \"fixture\")",
        ),
    ),
]


@pytest.mark.parametrize(("expectation", "reason"), INVALID, ids=[r for _, r in INVALID])
def test_invalid_body_expectation(tmp_path: Path, expectation: dict[str, Any], reason: str) -> None:
    assert_error(grade_one(body_run(tmp_path), expectation), reason)


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("../x", f'{CONTAINED} (got "../x")'),
        ("/etc/passwd", 'must be a relative path, not an absolute one (got "/etc/passwd")'),
        ("a\\b", "must use '/' as separator, not '\\'"),
        ("a//b", f'{CONTAINED} (got "a//b")'),
        ("./a", f'{CONTAINED} (got "./a")'),
        ("a/.", f'{CONTAINED} (got "a/.")'),
        ("", "must be a non-empty relative path"),
        ("a/", f'{CONTAINED} (got "a/")'),
        ("a\0b", "must not contain a NUL character"),
        (7, "must be a string (got 7)"),
    ],
)
def test_unsafe_expectation_path(tmp_path: Path, path: object, problem: str) -> None:
    result = grade_one(body_run(tmp_path), {"kind": "path", "path": path, "expect": "exists"})

    assert_error(result, invalid("path", "path", problem))


@pytest.mark.parametrize(
    ("expectation", "reason"),
    [
        (
            {"kind": "path", "path": "a", "expect": "exists"},
            invalid("path", "kind", "'path' expectations are only valid in body groups"),
        ),
        (
            {"kind": "context-text", "expect": "contains", "value": "x"},
            invalid(
                "context-text", "kind", "'context-text' expectations are only valid in body groups"
            ),
        ),
        (
            {"kind": "skill-read", "expect": "never", "turn": None},
            invalid(
                "skill-read",
                "turn",
                "a skill-read with expect 'never' takes no turn; remove the 'turn' key",
            ),
        ),
        (
            {"kind": "skill-read", "expect": "on-turn"},
            invalid(
                "skill-read",
                "turn",
                "a skill-read with expect 'on-turn' needs an integer 'turn' (one-based declared "
                "turn)",
            ),
        ),
        (
            {"kind": "skill-read", "expect": "by-turn", "turn": 4},
            invalid(
                "skill-read",
                "turn",
                "turn 4 is out of range: the group declares 3 turns (use 1..3)",
            ),
        ),
    ],
)
def test_invalid_description_expectation(
    tmp_path: Path, expectation: dict[str, Any], reason: str
) -> None:
    result = grade_one(description_run(tmp_path), expectation, "description")

    assert_error(result, reason)


def test_grade_time_and_load_time_reject_an_expectation_in_the_same_words(
    tmp_path: Path,
) -> None:
    expectation = {"id": "under-test", "variant": "candidate", "kind": "path", "path": "a"}
    document = group("body", [expectation], BODY_PROMPTS)
    with pytest.raises(DefinitionError) as loading:
        parse_group(document, tmp_path / "group.json", registered())

    result = grade_one(body_run(tmp_path), expectation)

    assert_error(
        result, f"invalid path expectation: {loading.value.pointer}: {loading.value.message}"
    )


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

KINDS = [*EXPECTATION_KINDS, "other"]
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


# One valid expectation per kind; the agreement test below mutates them a field or two at a time.
VALID = [
    {"kind": "skill-read", "expect": "by-turn", "turn": 1},
    {"kind": "resource-read", "resource": "workspace", "path": "notes.md", "expect": "read"},
    {"kind": "path", "path": "a", "expect": "exists", "turn": 2},
    {"kind": "changed-paths", "paths": ["a"], "expect": "equals"},
    {"kind": "file-text", "path": "a", "expect": "contains", "value": "x"},
    {"kind": "json", "path": "a.json", "expect": "field-equals", "pointer": "/a", "value": 1},
    {"kind": "response-text", "expect": "contains", "value": "x"},
    {"kind": "tool-call", "tool": "read", "expect": "called", "argumentContains": ["x"]},
    {"kind": "context-text", "expect": "contains", "value": "x", "request": "first"},
]
_MISSING = object()
MUTATED = st.builds(
    lambda base, variant, changes: {
        "id": "under-test",
        "variant": variant,
        **{
            key: value
            for key, value in {**base, **changes}.items()
            if value is not _MISSING and key != "comparison"
        },
    },
    st.sampled_from(VALID),
    st.sampled_from(["baseline", "candidate", "other"]),
    st.dictionaries(
        st.sampled_from([*FIELDS, "kind"]),
        st.just(_MISSING) | st.sampled_from(KINDS) | JSON_VALUES,
        max_size=2,
    ),
)


def _finite(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(expectation=MUTATED, group_type=st.sampled_from(["body", "description"]))
def test_grading_rejects_exactly_what_loading_rejects_and_says_the_same(
    expectation: dict[str, Any], group_type: str
) -> None:
    # Comparisons pair expectations and skill/context indexes depend on the variants: both are
    # group rules, checked at grade time against the checks and the evidence instead.
    assume(expectation.get("resource") not in ("skill", "context") and _finite(expectation))
    document = group(group_type, [expectation], BODY_PROMPTS)
    try:
        parse_group(document, Path("group.json"), registered())
    except DefinitionError as error:
        loading: str | None = f"{error.pointer}: {error.message}"
    else:
        loading = None

    try:
        parse_expectation(document, 0, group_type, len(BODY_PROMPTS))
    except ExpectationError as error:
        grading: str | None = str(error).split(" expectation: ", 1)[1]
    else:
        grading = None

    assert grading == loading
