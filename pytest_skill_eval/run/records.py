"""The records a group run writes for itself: runs that never executed, failed grades, groups."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..budget.ledger import Ledger
from ..definitions import VARIANTS as _VARIANTS
from ..definitions import LoadedDefinition, LoadedGroup, selected_groups
from ..evidence import layout, store
from ..evidence.records import (
    CannotRun,
    GradeRecord,
    GroupError,
    GroupRecord,
    HostChoice,
    RunRecord,
)
from ..evidence.states import group_state, unrecorded_group_state
from ..evidence.store import EvidenceError, json_bytes, sha256_bytes, sha256_file
from ..grading import grade_group
from ..hosts.subject import SubjectResult

# Widened to str: the run and grade mappings here are keyed by plain strings.
VARIANTS: tuple[str, ...] = _VARIANTS


def never_ran(run: RunRecord) -> SubjectResult:
    """A subject result for a run record without a subject: nothing beside it."""
    return SubjectResult(run.copy(), [], "")


def synthetic_run(
    group: LoadedGroup, variant: str, state: str, error: dict[str, str] | None
) -> RunRecord:
    """A run record for a variant of `group` whose subject never ran."""
    g = group.group
    return synthetic_record(variant, state, error, g.type, g.input.prompt, list(g.turns))


def synthetic_record(
    variant: str,
    state: str,
    error: dict[str, str] | None,
    evaluation_type: str,
    prompt: str | None,
    prompts: list[str],
) -> RunRecord:
    """The run.json shape of a run that never executed (reference §5.3)."""
    return {
        "schema_version": 1,
        "variant": variant,
        "state": state,
        "evaluationType": evaluation_type,
        "prompt": prompt,
        "prompts": prompts,
        "turns": [],
        "successfulReadPaths": [],
        "activation": {
            "targetRead": None,
            "firstReadTurn": None,
            "readTurns": [],
            "successfulReadPaths": [],
        },
        "response": "",
        "usage": None,
        "effects": None,
        "contextObservationArtifact": None,
        "artifacts": {
            "events": None,
            "final": layout.FINAL,
            "stderr": None,
            "context": None,
            "transcript": layout.TRANSCRIPT,
            "modelRequests": None,
        },
        "error": error,
    }


def cancelled_before_execution(group: LoadedGroup, variant: str) -> RunRecord:
    """A variant whose subject never started, recorded as cancelled."""
    msg = {"kind": "cancellation", "message": "Cancelled before subject execution"}
    return synthetic_run(group, variant, "cancelled", msg)


def ran_unrecorded(group: LoadedGroup, variant: str, variant_dir: Path, why: str) -> RunRecord:
    """A subject that started but left no run record: infrastructure-failed, never cancelled."""
    msg = {
        "kind": "infrastructure",
        "message": f"the {variant} subject ran but its run could not be recorded: {why}; "
        f"its evidence so far is kept in {variant_dir}",
    }
    return synthetic_run(group, variant, "infrastructure-failed", msg)


def host_record(host: str, chosen: bool, declared: str | None) -> HostChoice | None:
    """How a run's host was chosen (by the invocation or the definition); None on Pi by
    declaration (as every older run)."""
    if not chosen and host == layout.DEFAULT_HOST:
        return None
    return {
        "name": host,
        "chosenBy": "invocation" if chosen else "definition",
        "declared": declared or host,
    }


def stamp_nonce(run: RunRecord) -> None:
    """Give a run record its `nonce` before it is first written: the random id the noise floor
    and the significance gate count the run once by. A reused run keeps its origin's (or, from
    before nonces, none): it is the same observation, not a new one. A run that observed
    nothing (cancelled, infrastructure-failed: a merge's `shard-missing` among them) is never
    counted and gets none, so its record is the same each time it is written."""
    if run.get("state") in ("cancelled", "infrastructure-failed"):
        return
    if "reused" not in run and not isinstance(run.get("nonce"), str):
        run["nonce"] = secrets.token_hex(16)


def unpersisted_run(run: RunRecord, transcript: Sequence[Any], error: str) -> RunRecord:
    """The fallback record of a run whose files could not all be written: transcript inline."""
    failed: RunRecord = {
        **run,
        "state": "infrastructure-failed",
        "transcript": list(transcript),
        "error": {"kind": "persistence", "message": error, "cause": run.get("error")},
    }
    failed["artifacts"] = {**run["artifacts"], "final": None}
    return failed


def failed_grade(dirs: Mapping[str, Path], hashes: Mapping[str, str], reason: str) -> GradeRecord:
    """The grade of a group whose grading raised: its runs stay identified."""
    return {
        "schema_version": 1,
        "state": "grade-error",
        "evidence": {v: {"path": str(dirs[v] / layout.RUN), "sha256": hashes[v]} for v in dirs},
        "checks": [],
        "comparisons": [],
        "errors": [{"id": None, "reason": f"deterministic grading failed: {reason}"}],
    }


def unpersisted_grade(grade: GradeRecord, error: str) -> GradeRecord:
    """The fallback grade when deterministic-grade.json could not be written."""
    return {
        **grade,
        "state": "grade-error",
        "errors": [
            *grade.get("errors", []),
            {"id": None, "reason": f"failed to persist {layout.GRADE}: {error}"},
        ],
    }


def unpersisted_group(record: GroupRecord, grade_file: str, error: str) -> GroupRecord:
    """The fallback group record when group.json could not be written."""
    errors: list[GroupError] = [
        *record["errors"],
        {"kind": "persistence", "artifact": layout.GROUP, "message": error},
    ]
    return {
        **record,
        "state": unrecorded_group_state(record["state"]),
        "artifacts": {"grade": grade_file, "group": layout.GROUP_FALLBACK},
        "errors": errors,
    }


def cannot_run_records(
    definitions: Sequence[LoadedDefinition],
    selectors: Sequence[str],
    hosts: Sequence[str],
    refused: Callable[[LoadedGroup, Sequence[str]], Mapping[str, str]] | None = None,
) -> list[CannotRun]:
    """The selected groups a chosen host cannot run, in suite then host order: a fact of the
    host (`Group.cannot_run`), else a skill it would refuse (`refused(group, hosts)`: host → why,
    for the hosts that pass the first)."""
    facts: list[CannotRun] = []
    for loaded in selected_groups(definitions, selectors):
        reasons = {host: loaded.group.cannot_run(host) for host in hosts}
        runnable = [host for host, reason in reasons.items() if reason is None]
        if refused is not None and runnable:
            reasons |= refused(loaded, runnable)
        facts += [
            {"group": loaded.group.id, "host": host, "reason": reason}
            for host, reason in reasons.items()
            if reason is not None
        ]
    return facts


def persist_fallback(variant_dir: Path, run: RunRecord) -> None:
    """Write a run record that could not be persisted as it should, where there is room."""
    # run.json when it is still free, else beside it; only when neither can be written does
    # the invocation stop, since nothing of this run would be on record.
    last: EvidenceError | None = None
    for name in (layout.RUN, layout.RUN_FALLBACK):
        if (variant_dir / name).exists():
            continue
        try:
            store.write_json_once(variant_dir / name, run)
            return
        except EvidenceError as error:
            last = error
    raise last or EvidenceError(f"no place left to record the run in {variant_dir}")


def unstartable(
    group: LoadedGroup, variant: str, ledger: Ledger | None, ready: bool, problem: str | None
) -> RunRecord | None:
    """The run of a subject that may not start now besides cancellation (the budget spent or
    its ledger unusable, the group's resources not ready: `problem`), or None."""
    try:
        exhausted = ledger is not None and ledger.exhausted()
        spend = ledger.snapshot() if ledger is not None and exhausted else None
    except OSError as error:
        msg = {"kind": "infrastructure", "message": f"budget ledger unusable: {error}"}
        return synthetic_run(group, variant, "infrastructure-failed", msg)
    if exhausted and spend is not None:
        msg = {
            "kind": "cancellation",
            "message": f"budget exhausted: spent {spend['spent']} of {spend['maxCost']} USD "
            "before this subject could start",
        }
        return synthetic_run(group, variant, "cancelled", msg)
    if not ready:
        msg = {"kind": "setup", "message": problem or "group resources missing"}
        return synthetic_run(group, variant, "invalid", msg)
    return None


def grade_and_record(
    group_dir: Path,
    loaded: LoadedGroup,
    trial: int,
    runs: Mapping[str, Mapping[str, Any]],
    selected: Mapping[str, bool],
    *,
    resource_failed: bool,
    host: str,
    completed_at: str,
) -> dict[str, Any]:
    """Grade a group whose every variant is on record; write its grade, its group record and its
    manifest (each a fallback file beside it when it cannot be written)."""
    hashes = {}
    for variant in VARIANTS:
        path = layout.run_file(group_dir, variant)
        hashes[variant] = (
            sha256_file(path) if path.is_file() else sha256_bytes(json_bytes(runs[variant]))
        )
    dirs = {v: group_dir / v for v in VARIANTS}
    grade: GradeRecord
    try:
        grade = grade_group(loaded.raw, runs, dirs, hashes)
    except Exception as error:  # grading must never lose the runs it grades
        grade = failed_grade(dirs, hashes, str(error))
    errors: list[GroupError] = []
    grade_file = layout.GRADE
    try:
        store.write_json_once(group_dir / grade_file, grade)
    except EvidenceError as error:
        grade_file = layout.GRADE_FALLBACK
        grade = unpersisted_grade(grade, str(error))
        errors.append({"kind": "persistence", "artifact": layout.GRADE, "message": str(error)})
        store.write_json_once(group_dir / grade_file, grade)
    states = {v: runs[v]["state"] for v in VARIANTS}
    record: GroupRecord = {
        "id": loaded.group.id,
        "position": loaded.position,
        "trial": trial,
        "state": group_state(states, selected, grade["state"], resource_failed),
        "variants": states,
        "grade": grade["state"],
        "artifacts": {"grade": grade_file, "group": layout.GROUP},
        "errors": errors,
        "completedAt": completed_at,
    }
    if host != layout.DEFAULT_HOST:
        record["host"] = host
    try:
        store.write_json_once(group_dir / layout.GROUP, record)
    except EvidenceError as error:
        record = unpersisted_group(record, grade_file, str(error))
        store.write_json_once(group_dir / layout.GROUP_FALLBACK, record)
    store.write_manifest(group_dir)
    return {"group": record, "grade": grade, "runs": runs, "dir": group_dir}
