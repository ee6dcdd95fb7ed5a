"""Workspace expectations: `path`, `changed-paths`, `file-text` and `json`."""

from __future__ import annotations

import json
from typing import Any

from pytest_skill_eval.grading.support import (
    TEXT_EXPECTS,
    Check,
    Context,
    Spec,
    is_safe_relative_path,
    read_workspace_file,
    sha256_hex,
    text_matches,
    workspace_evidence,
)
from pytest_skill_eval.grading.values import (
    PointerSyntaxError,
    json_equal,
    parse_pointer,
    resolve_pointer,
    utf16_sort_key,
)

PATH_EXPECTS = ("exists", "absent")
CHANGED_EXPECTS = ("equals", "excludes")
JSON_EXPECTS = (
    "available",
    "missing",
    "valid",
    "malformed",
    "field-present",
    "field-absent",
    "field-equals",
)


def grade_path(spec: Spec, ctx: Context) -> Check:
    """Whether a workspace path exists (a directory or symlink counts as present)."""
    spec.allow("path")
    expect = spec.choice("expect", PATH_EXPECTS)
    path = spec.safe_path()
    turn = spec.turn()
    expected = {"expect": expect, "path": path, "turn": turn}
    workspace = workspace_evidence(ctx, turn) if ctx.complete else None
    if workspace is None:
        return spec.unavailable(expected)
    entry = workspace.files.get(path)
    observed = {
        "path": path,
        "state": "missing" if entry is None else "present",
        "type": None if entry is None else entry.type,
        "turn": turn,
    }
    return spec.check((entry is not None) == (expect == "exists"), expected, observed)


def grade_changed_paths(spec: Spec, ctx: Context) -> Check:
    """The set of created, modified and deleted files, cumulative from before the run."""
    spec.allow("paths")
    expect = spec.choice("expect", CHANGED_EXPECTS)
    paths = spec.raw.get("paths")
    if not isinstance(paths, list) or not all(is_safe_relative_path(p) for p in paths):
        raise spec.invalid("paths must be an array of relative paths")
    if len(set(paths)) != len(paths):
        raise spec.invalid("paths must not repeat a path")
    turn = spec.turn()
    wanted = sorted(paths, key=utf16_sort_key)
    expected = {"expect": expect, "paths": wanted, "turn": turn}
    workspace = workspace_evidence(ctx, turn) if ctx.complete else None
    if workspace is None:
        return spec.unavailable(expected)
    actual = sorted(workspace.changed_paths(), key=utf16_sort_key)
    passed = actual == wanted if expect == "equals" else not set(wanted) & set(actual)
    return spec.check(passed, expected, {"paths": actual, "turn": turn})


def grade_file_text(spec: Spec, ctx: Context) -> Check:
    """Text of a workspace file; a missing file fails every expect, even not-contains."""
    spec.allow("path", "value")
    expect = spec.choice("expect", TEXT_EXPECTS)
    path = spec.safe_path()
    value = spec.string("value")
    turn = spec.turn()
    expected = {"expect": expect, "path": path, "value": value, "turn": turn}
    workspace = workspace_evidence(ctx, turn) if ctx.complete else None
    if workspace is None:
        return spec.unavailable(expected)
    data = read_workspace_file(workspace, path)
    observed = {
        "path": path,
        "file": "missing" if data is None else "present",
        "sha256": None if data is None else sha256_hex(data),
        "turn": turn,
    }
    passed = data is not None and text_matches(
        expect, data.decode("utf-8", errors="replace"), value
    )
    return spec.check(passed, expected, observed)


def grade_json(spec: Spec, ctx: Context) -> Check:
    """Presence, validity and RFC 6901 fields of a JSON workspace file."""
    spec.allow("path", "pointer", "value")
    expect = spec.choice("expect", JSON_EXPECTS)
    path = spec.safe_path()
    turn = spec.turn()
    pointer = spec.raw.get("pointer")
    if expect.startswith("field-") and pointer is None:
        raise spec.invalid(f"pointer is required when expect is {expect}")
    if pointer is not None:
        if not isinstance(pointer, str):
            raise spec.invalid("pointer must be a string")
        try:
            parse_pointer(pointer)
        except PointerSyntaxError as error:
            raise spec.invalid(f"pointer {pointer!r}: {error}") from error
    if expect == "field-equals" and "value" not in spec.raw:
        raise spec.invalid("value is required when expect is field-equals (it may be null)")
    value = spec.raw.get("value") if expect == "field-equals" else None
    expected = {"expect": expect, "path": path, "pointer": pointer, "value": value, "turn": turn}
    workspace = workspace_evidence(ctx, turn) if ctx.complete else None
    if workspace is None:
        return spec.unavailable(expected)
    data = read_workspace_file(workspace, path)
    observed = _observe_json(path, data, pointer, turn)
    if expect in ("available", "missing"):
        passed = observed["file"] == ("present" if expect == "available" else "missing")
    elif expect in ("valid", "malformed"):
        passed = observed["parse"] == expect
    elif expect == "field-present":
        passed = observed["field"] == "present"
    elif expect == "field-absent":
        passed = observed["field"] == "absent"
    else:
        passed = observed["field"] == "present" and json_equal(observed["value"], value)
    return spec.check(passed, expected, observed)


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
