"""Read expectations: `skill-read` (target activation) and `resource-read` (any declared file)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, get_args

from pytest_skill_eval.definitions import ResourceReadExpectation, SkillReadExpectation
from pytest_skill_eval.evidence.skill_records import Activation, OfferedState
from pytest_skill_eval.grading.support import (
    Check,
    Context,
    EvidenceError,
    expected_of,
    fingerprint,
    graded,
    is_within,
    list_at,
    mapping_at,
    read_paths,
    string_at,
    unavailable,
)


def grade_skill_read(expectation: SkillReadExpectation, ctx: Context) -> Check:
    """Whether and when the variant's target SKILL.md was read (description groups)."""
    expect, turn = expectation.expect, expectation.turn
    expected: dict[str, Any] = {"read": expect, "turn": turn}
    if expectation.offered is not None:
        expected["offered"] = expectation.offered
    if not ctx.complete:
        return unavailable(expectation, expected)
    observed = _activation(ctx.run)
    if observed is None:
        return unavailable(expectation, expected)
    offered_as_asked = True
    if expectation.offered is not None:
        offered = _target_offered(ctx.run)
        if offered == "unobservable":
            return unavailable(expectation, expected)
        observed["offered"] = offered
        offered_as_asked = (offered in (None, "intact")) == expectation.offered
    first = observed["firstReadTurn"]
    if expect == "never":
        passed = not observed["targetRead"]
    elif expect == "on-turn":
        passed = turn in observed["readTurns"]
    elif expect == "by-turn":
        passed = first is not None and turn is not None and first <= turn
    else:
        passed = first is None or (turn is not None and first >= turn)
    return graded(expectation, passed and offered_as_asked, expected, observed)


def _target_offered(run: Mapping[str, Any]) -> OfferedState | None:
    """The target's offered state (`intact`, `cut`, ...); None when the variant has no target;
    `unobservable` also when the run predates the record."""
    resources = run.get("resources")
    if isinstance(resources, Mapping) and resources.get("targetPath", "") is None:
        return None
    activation = mapping_at(run.get("activation"), "activation")
    if "offered" not in activation:
        return "unobservable"
    offered = activation.get("offered")
    states: dict[Any, OfferedState] = {state: state for state in get_args(OfferedState)}
    if offered is not None and offered not in states:
        raise EvidenceError(f"run evidence is malformed: activation.offered is {offered!r}")
    return None if offered is None else states[offered]


def _activation(run: Mapping[str, Any]) -> Activation | None:
    resources = run.get("resources")
    if isinstance(resources, Mapping) and resources.get("targetPath", "") is None:
        # A variant without a target can never read it.
        return {"targetRead": False, "firstReadTurn": None, "readTurns": []}
    activation = mapping_at(run.get("activation"), "activation")
    target_read = activation.get("targetRead")
    if target_read is None:
        return None
    if not isinstance(target_read, bool):
        raise EvidenceError("run evidence is malformed: activation.targetRead must be a boolean")
    first = activation.get("firstReadTurn")
    turns = list_at(activation.get("readTurns"), "activation.readTurns")
    if (first is not None and not _is_int(first)) or not all(_is_int(t) for t in turns):
        raise EvidenceError("run evidence is malformed: activation turns must be integers")
    return {"targetRead": target_read, "firstReadTurn": first, "readTurns": list(turns)}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def grade_resource_read(expectation: ResourceReadExpectation, ctx: Context) -> Check:
    """Whether one declared workspace, skill or context file was successfully read."""
    expected = expected_of(expectation, "expect", "resource", "index", "path", "turn")
    if not ctx.complete:
        return unavailable(expectation, expected)

    resource, path, turn = expectation.resource, expectation.path, expectation.turn
    root, known = _resource_root(ctx, resource, expectation.index)
    canonical_root = os.path.realpath(root)
    canonical = os.path.realpath(os.path.join(canonical_root, *path.split("/")))
    if not is_within(canonical, canonical_root):
        raise EvidenceError("resource-read path escapes its declared root")
    # A workspace file may have existed only between captures; having been read proves it.
    was_read = resource == "workspace" and canonical in (read_paths(ctx.run, None) or [])
    if path not in known and not was_read:
        what = "workspace resource" if resource == "workspace" else "resource"
        raise EvidenceError(f"declared {what} path is unavailable: {path}")
    reads = read_paths(ctx.run, turn)
    if reads is None:
        return unavailable(expectation, expected)
    read = canonical in reads
    observed = {"path": canonical, "read": read, "turn": turn}
    return graded(expectation, read == (expectation.expect == "read"), expected, observed)


def _resource_root(ctx: Context, resource: str, index: int | None) -> tuple[str, set[str]]:
    """The canonical root of the declared resource and the relative paths known to exist in it."""
    run = ctx.run
    if resource == "workspace":
        root = string_at(run.get("workspace"), "workspace")
        known: set[str] = set()
        effects = run.get("effects")
        if effects is not None:
            effects = mapping_at(effects, "effects")
            known |= fingerprint(effects.get("before"), "effects.before").keys()
            known |= fingerprint(effects.get("after"), "effects.after").keys()
        else:
            # Description runs record no effects; their workspace is the fixture copy.
            fixture = mapping_at(run.get("resources"), "resources").get("fixture")
            if fixture is not None:
                fixture = mapping_at(fixture, "resources.fixture")
                known |= fingerprint(fixture.get("files"), "resources.fixture.files").keys()
        return root, known
    assert index is not None  # the model requires an index for skill and context resources
    key = "skills" if resource == "skill" else "context"
    entries = list_at(mapping_at(run.get("resources"), "resources").get(key), f"resources.{key}")
    if index >= len(entries):
        raise EvidenceError(f"declared resource is unavailable: {resource} {index}")
    entry = mapping_at(entries[index], f"resources.{key}[{index}]")
    root = string_at(entry.get("path"), f"resources.{key}[{index}].path")
    return root, set(fingerprint(entry.get("files"), f"resources.{key}[{index}].files"))
