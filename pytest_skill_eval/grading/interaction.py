"""Interaction expectations: `response-text`, `tool-call` and `context-text`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_skill_eval.definitions import (
    ContextTextExpectation,
    ResponseTextExpectation,
    ToolCallExpectation,
)
from pytest_skill_eval.grading.support import (
    Check,
    Context,
    EvidenceError,
    expected_of,
    graded,
    is_within,
    list_at,
    mapping_at,
    run_turns,
    sha256_hex,
    string_at,
    text_matches,
    turn_record,
    unavailable,
)
from pytest_skill_eval.grading.values import (
    js_stringify,
    text_excerpt,
    text_sha256,
    utf16_length,
    utf16_prefix,
)

PREVIEW_UNITS = 240
CONTEXT_CHANGED = "context observation artifact changed after run persistence"


def grade_response_text(expectation: ResponseTextExpectation, ctx: Context) -> Check:
    """Text of the final response, or of one turn's last assistant message."""
    expect, value, turn = expectation.expect, expectation.value, expectation.turn
    expected = expected_of(expectation, "expect", "value", "turn")
    if not ctx.complete:
        return unavailable(expectation, expected)
    if turn is None:
        response = string_at(ctx.run.get("response"), "response")
        turns = run_turns(ctx.run)
        observed_turn = turns[-1].get("turn", len(turns)) if turns else 1
    else:
        record = turn_record(ctx.run, turn)
        if record is None:
            return unavailable(expectation, expected)
        response = string_at(record.get("response"), f"turn {turn} response")
        observed_turn = turn
    observed: dict[str, Any] = {"response": response, "turn": observed_turn}
    passed = text_matches(expect, response, value)
    if not passed:
        observed.update(text_excerpt(expect, response, value))
    return graded(expectation, passed, expected, observed)


def grade_tool_call(expectation: ToolCallExpectation, ctx: Context) -> Check:
    """Calls of one tool, optionally narrowed by substrings of their compact JSON arguments."""
    tool, expect, turn = expectation.tool, expectation.expect, expectation.turn
    contains, excludes = expectation.argument_contains, expectation.argument_not_contains
    expected = expected_of(
        expectation, "tool", "expect", "argument_contains", "argument_not_contains", "turn"
    )
    if not ctx.complete:
        return unavailable(expectation, expected)
    unseen = ctx.run.get("unobservableTools")
    if isinstance(unseen, Mapping) and isinstance(unseen.get(tool), str):
        # The host cannot show calls of this tool: no observation, never a guessed fail.
        return {**unavailable(expectation, expected), "observed": {"reason": unseen[tool]}}
    if turn is None:
        records = run_turns(ctx.run)
    else:
        record = turn_record(ctx.run, turn)
        if record is None:
            return unavailable(expectation, expected)
        records = [record]
    calls: list[dict[str, Any]] = []
    matching: list[dict[str, Any]] = []
    for record in records:
        where = f"turn {record.get('turn')} toolActivity"
        for index, raw in enumerate(list_at(record.get("toolActivity"), where)):
            activity = mapping_at(raw, f"{where}[{index}]")
            if activity.get("toolName") != tool:
                continue
            call = {
                "args": activity.get("args"),
                "completed": activity.get("completed") is True,
                "isError": activity.get("isError"),
            }
            if "exitCode" in activity:  # a declared command whose status the host showed
                call["exitCode"] = activity["exitCode"]
            calls.append(call)
            # JSON.stringify(undefined) has no text; the reference matched against "null".
            serialised = js_stringify(call["args"])
            wanted = all(text in serialised for text in contains)
            if wanted and not any(text in serialised for text in excludes):
                matching.append(call)
    succeeded = [c for c in matching if c["completed"] and _succeeded(c)]
    failed = [c for c in matching if c["completed"] and not _succeeded(c)]
    passed = {
        "called": bool(matching),
        "succeeded": bool(succeeded),
        "failed": bool(failed),
        # Without filters every call matches, so this is "zero calls to the tool".
        "not-called": not matching,
    }[expect]
    observed = {
        "tool": tool,
        "turn": turn,
        "callCount": len(calls),
        "matchingCallCount": len(matching),
        "succeededCount": len(succeeded),
        "failedCount": len(failed),
        "calls": calls,
    }
    return graded(expectation, passed, expected, observed)


def _succeeded(call: Mapping[str, Any]) -> bool:
    """A completed call the host did not report as an error; a declared command exited 0."""
    return call["isError"] is not True and call.get("exitCode", 0) == 0


def grade_context_text(expectation: ContextTextExpectation, ctx: Context) -> Check:
    """Text the subject's model saw at one surface, request and turn (observer evidence)."""
    expected = expected_of(expectation, "expect", "value", "surface", "request", "turn")
    if not ctx.complete:
        return unavailable(expectation, expected)
    surface, turn = expectation.surface, expectation.turn
    observations = _context_observations(ctx)
    if observations is None:
        return unavailable(expectation, expected)
    candidates = [
        o
        for o in observations
        if o.get("surface") == surface and (turn is None or _same_int(o.get("turn"), turn))
    ]
    entry = _select(candidates, expectation.request)
    if entry is None:
        return unavailable(expectation, expected)
    text = entry.get("text")
    if not isinstance(text, str) and surface == "system-prompt":
        text = entry.get("systemPrompt")
    text = string_at(text, "context observation text")
    expect, value = expectation.expect, expectation.value
    matched = text_matches(expect, text, value)
    observed = {
        "surface": surface,
        "turn": entry.get("turn"),
        "request": _request_in_turn(entry),
        "characters": utf16_length(text),
        "sha256": text_sha256(text),
        "matched": matched,
        "preview": utf16_prefix(text, PREVIEW_UNITS),
    }
    if not matched:
        observed.update(text_excerpt(expect, text, value))
    return graded(expectation, matched, expected, observed)


def _same_int(value: object, number: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value == number


def _request_in_turn(entry: Mapping[str, Any]) -> int:
    # System-prompt observations carry no request number; they stand for request 1.
    value = entry.get("requestInTurn")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _select(entries: list[Mapping[str, Any]], request: object) -> Mapping[str, Any] | None:
    if not entries:
        return None
    if request == "first":
        return entries[0]
    if request == "last":
        return entries[-1]
    return next((e for e in entries if _request_in_turn(e) == request), None)


def _context_observations(ctx: Context) -> list[Mapping[str, Any]] | None:
    """The observer's records after re-checking the artifact hash; None when none were kept."""
    artifact = ctx.run.get("contextObservationArtifact")
    if artifact is None:
        return None
    artifact = mapping_at(artifact, "contextObservationArtifact")
    name, digest = artifact.get("path"), artifact.get("sha256")
    if name is None or digest is None:
        return None
    name = string_at(name, "contextObservationArtifact.path")
    digest = string_at(digest, "contextObservationArtifact.sha256")
    if ctx.run_dir is None:
        raise EvidenceError("the run directory of the context observation artifact is unknown")
    run_dir = os.path.realpath(ctx.run_dir)
    path = os.path.realpath(os.path.join(run_dir, name))
    if not is_within(path, run_dir) or path == run_dir:
        raise EvidenceError(f"context observation artifact escapes its run directory: {name}")
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise EvidenceError(CONTEXT_CHANGED) from error
    if sha256_hex(data) != digest:
        raise EvidenceError(CONTEXT_CHANGED)
    records: list[Mapping[str, Any]] = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            message = f"context observation line {number} is not valid JSON"
            raise EvidenceError(message) from error
        records.append(mapping_at(record, f"context observation line {number}"))
    return records
