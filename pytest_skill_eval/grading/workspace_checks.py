"""Workspace expectations: `path`, `changed-paths`, `file-text` and `json`."""

from __future__ import annotations

import json
from typing import Any

from pytest_skill_eval.definitions import (
    ChangedPathsExpectation,
    FileTextExpectation,
    JsonExpectation,
    PathExpectation,
)
from pytest_skill_eval.grading.support import (
    Check,
    Context,
    expected_of,
    graded,
    read_workspace_file,
    sha256_hex,
    text_matches,
    unavailable,
    workspace_evidence,
)
from pytest_skill_eval.grading.values import (
    json_equal,
    resolve_pointer,
    text_excerpt,
    utf16_sort_key,
)


def grade_path(expectation: PathExpectation, ctx: Context) -> Check:
    """Whether a workspace path exists (a directory or symlink counts as present)."""
    expect, path, turn = expectation.expect, expectation.path, expectation.turn
    expected = expected_of(expectation, "expect", "path", "turn")
    workspace = workspace_evidence(ctx, turn) if ctx.complete else None
    if workspace is None:
        return unavailable(expectation, expected)
    entry = workspace.files.get(path)
    observed = {
        "path": path,
        "state": "missing" if entry is None else "present",
        "type": None if entry is None else entry.type,
        "turn": turn,
    }
    return graded(expectation, (entry is not None) == (expect == "exists"), expected, observed)


def grade_changed_paths(expectation: ChangedPathsExpectation, ctx: Context) -> Check:
    """The set of created, modified and deleted files, cumulative from before the run."""
    expect, turn = expectation.expect, expectation.turn
    wanted = sorted(expectation.paths, key=utf16_sort_key)
    expected = {"expect": expect, "paths": wanted, "turn": turn}
    workspace = workspace_evidence(ctx, turn) if ctx.complete else None
    if workspace is None:
        return unavailable(expectation, expected)
    actual = sorted(workspace.changed_paths(), key=utf16_sort_key)
    passed = actual == wanted if expect == "equals" else not set(wanted) & set(actual)
    return graded(expectation, passed, expected, {"paths": actual, "turn": turn})


def grade_file_text(expectation: FileTextExpectation, ctx: Context) -> Check:
    """Text of a workspace file; a missing file fails every expect, even not-contains."""
    expected = expected_of(expectation, "expect", "path", "value", "turn")
    path, turn = expectation.path, expectation.turn
    workspace = workspace_evidence(ctx, turn) if ctx.complete else None
    if workspace is None:
        return unavailable(expectation, expected)
    data = read_workspace_file(workspace, path)
    observed = {
        "path": path,
        "file": "missing" if data is None else "present",
        "sha256": None if data is None else sha256_hex(data),
        "turn": turn,
    }
    text = None if data is None else data.decode("utf-8", errors="replace")
    expect, value = expectation.expect, expectation.value
    passed = text is not None and text_matches(expect, text, value)
    if text is not None and not passed:
        # The hash proves what was read; the excerpt shows the reader where it went wrong.
        observed.update(text_excerpt(expect, text, value))
    return graded(expectation, passed, expected, observed)


def grade_json(expectation: JsonExpectation, ctx: Context) -> Check:
    """Presence, validity and RFC 6901 fields of a JSON workspace file."""
    expected = expected_of(expectation, "expect", "path", "pointer", "value", "turn")
    path, turn = expectation.path, expectation.turn
    workspace = workspace_evidence(ctx, turn) if ctx.complete else None
    if workspace is None:
        return unavailable(expectation, expected)
    data = read_workspace_file(workspace, path)
    observed = _observe_json(path, data, expectation.pointer, turn)
    expect = expectation.expect
    if expect in ("available", "missing"):
        passed = observed["file"] == ("present" if expect == "available" else "missing")
    elif expect in ("valid", "malformed"):
        passed = observed["parse"] == expect
    elif expect == "field-present":
        passed = observed["field"] == "present"
    elif expect == "field-absent":
        passed = observed["field"] == "absent"
    else:
        passed = observed["field"] == "present" and json_equal(observed["value"], expectation.value)
    return graded(expectation, passed, expected, observed)


def _observe_json(path: str, data: bytes | None, pointer: str | None, turn: int | None) -> Any:
    if data is None:
        return {
            "path": path,
            "file": "missing",
            "sha256": None,
            "parse": "unavailable",
            "field": "unavailable",
            "value": None,
            "turn": turn,
        }
    observed = {
        "path": path,
        "file": "present",
        "sha256": sha256_hex(data),
        "parse": "valid",
        "field": "unavailable",
        "value": None,
        "turn": turn,
    }
    try:
        document = json.loads(data.decode("utf-8", errors="replace"), parse_constant=_reject)
    except (ValueError, RecursionError):
        observed["parse"] = "malformed"
        return observed
    if pointer is not None:
        present, value = resolve_pointer(document, pointer)
        observed["field"] = "present" if present else "absent"
        observed["value"] = value
    return observed


def _reject(name: str) -> Any:
    # JSON.parse rejects NaN and Infinity; so must we, or the grade would depend on the grader.
    raise ValueError(f"{name} is not JSON")
