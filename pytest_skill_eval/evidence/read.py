"""The one reader of saved evidence: results, aggregates, groups, runs (and fallbacks), grades.

The terminal summary, `summary.json`, aggregates, every view and the review read through here,
so a fallback name or a layout rule is honoured by all of them or by none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..definitions import VARIANTS
from ..errors import SkillEvalError
from . import layout
from .records import (
    AggregateRecord,
    GradeRecord,
    GroupRecord,
    InvocationRecord,
    RunRecord,
    SummaryRecord,
)

_POSITION = re.compile(r"[0-9]+")


class ReadError(SkillEvalError):
    """A result cannot be read as asked: unknown selector, unreadable or damaged evidence."""


def read_evidence_json(path: Path) -> Any:
    """Read one JSON evidence file; unreadable or malformed evidence is a ReadError."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ReadError(f"cannot read {path}: {error.strerror or error}") from error
    except ValueError as error:
        raise ReadError(f"{path} is not valid JSON ({error}); the evidence is damaged") from error


def optional_json(path: Path) -> Any:
    """A JSON evidence file that may be absent: None when it is."""
    return read_evidence_json(path) if path.is_file() else None


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else an empty one (evidence may lack optional parts)."""
    return value if isinstance(value, Mapping) else {}


# ---------------------------------------------------------------------------------------------
# Results and aggregates


def is_aggregate(directory: Path) -> bool:
    """Whether a directory holds an aggregate over trials rather than one result."""
    return layout.aggregate_file(directory).is_file()


def is_finished(result_dir: Path) -> bool:
    """Whether a result directory has its summary (written last)."""
    return layout.summary_file(result_dir).is_file()


def load_summary(result_dir: Path) -> SummaryRecord:
    """`summary.json` of a result directory, or a ReadError saying what the directory lacks."""
    path = layout.summary_file(result_dir)
    if not path.is_file():
        raise ReadError(
            f"{result_dir} has no {layout.SUMMARY} or {layout.AGGREGATE}: it is not a finished "
            "result. Pass a result id or directory under .skill-eval/runs."
        )
    summary = read_evidence_json(path)
    if not isinstance(summary, dict) or not isinstance(summary.get("groups"), list):
        raise ReadError(f"{path} has no groups list; the evidence is damaged")
    return cast(SummaryRecord, summary)


def summary_or_none(result_dir: Path) -> SummaryRecord | None:
    """`summary.json` when the result has one (an interrupted result may not)."""
    path = layout.summary_file(result_dir)
    return cast(SummaryRecord, read_evidence_json(path)) if path.is_file() else None


def load_invocation(result_dir: Path) -> InvocationRecord | None:
    """`invocation.json` when present and an object."""
    invocation = optional_json(layout.invocation_file(result_dir))
    return cast(InvocationRecord, invocation) if isinstance(invocation, dict) else None


def load_aggregate(aggregate_dir: Path) -> AggregateRecord:
    """`aggregate.json`, which must be an object."""
    path = layout.aggregate_file(aggregate_dir)
    data = read_evidence_json(path)
    if not isinstance(data, Mapping):
        raise ReadError(f"{path} is not an object; the evidence is damaged")
    return cast(AggregateRecord, data)


def aggregate_trial_dirs(aggregate_dir: Path) -> list[Path]:
    """The result directories an aggregate lists (siblings in the same runs directory)."""
    found = []
    for trial in load_aggregate(aggregate_dir).get("trials") or []:
        identity = mapping(trial).get("id")
        if not isinstance(identity, str) or not layout.is_safe_id(identity):
            raise ReadError(f"{layout.aggregate_file(aggregate_dir)} names an unsafe trial id")
        found.append(aggregate_dir.parent / identity)
    return found


# ---------------------------------------------------------------------------------------------
# Groups, runs and grades


def group_record(group_dir: Path) -> GroupRecord | None:
    """The persisted group record (or its fallback), if the group was finalised."""
    for name in layout.GROUP_FILES:
        path = group_dir / name
        if path.is_file():
            return cast(GroupRecord, read_evidence_json(path))
    return None


def group_records(result_dir: Path) -> list[GroupRecord]:
    """Finalised group records of a result in suite order; an unfinished group is `cancelled`."""
    groups_dir = layout.groups_dir(result_dir)
    records: list[GroupRecord] = []
    if groups_dir.is_dir():
        for group_dir in sorted(groups_dir.iterdir()):
            record = group_record(group_dir)
            if record is None:
                group_id, host = layout.split_group_dir_name(group_dir.name)
                record = {
                    "id": group_id,
                    "position": None,
                    "state": "cancelled",
                    "variants": {},
                    "grade": None,
                    "errors": [{"kind": "cancellation", "message": "the group never finished"}],
                }
                if host != layout.DEFAULT_HOST:
                    record["host"] = host
            records.append(record)
    return sorted(
        records,
        # A group's hosts follow it, Pi first and the others by name.
        key=lambda r: (r.get("position") or 0, r["id"], "host" in r, r.get("host", "")),
    )


def read_run(variant_dir: Path) -> tuple[str, RunRecord] | None:
    """The run record of a variant and its file name: the persistence fallback, else run.json.

    A failed persistence leaves its record beside (or instead of) run.json; it is the truth.
    """
    for name in layout.RUN_FILES:
        path = variant_dir / name
        if path.is_file():
            run = read_evidence_json(path)
            if not isinstance(run, dict):
                raise ReadError(f"{path} is not a JSON object; the evidence is damaged")
            return name, cast(RunRecord, run)
    return None


def grade_file(record: Mapping[str, Any]) -> str | None:
    """The grade file a group record names (canonical or fallback)."""
    name = mapping(record.get("artifacts")).get("grade")
    return name if isinstance(name, str) and name else None


def read_grade(group_dir: Path, record: Mapping[str, Any]) -> GradeRecord | None:
    """The deterministic grade a group record names, when it exists and is an object."""
    name = grade_file(record)
    if name is None:
        return None
    grade = optional_json(group_dir / name)
    return cast(GradeRecord, grade) if isinstance(grade, dict) else None


@dataclass(frozen=True, slots=True)
class GroupEvidence:
    """Everything the views read about one group of a result."""

    record: Mapping[str, Any]
    directory: Path
    definition: Mapping[str, Any]
    grade: Mapping[str, Any] | None
    grade_file: str | None
    review: Mapping[str, Any] | None
    runs: Mapping[str, Mapping[str, Any] | None]
    run_files: Mapping[str, str | None]

    @property
    def id(self) -> str:
        """The group id."""
        return str(self.record.get("id"))

    @property
    def group_file(self) -> str:
        """The group record file name (`group.json` or its fallback)."""
        artifacts = self.record.get("artifacts") or {}
        return str(artifacts.get("group") or layout.GROUP)


def load_group(result_dir: Path, record: Mapping[str, Any]) -> GroupEvidence:
    """Read the definition, grade, review and both runs of one summarised group."""
    identity = str(record.get("id"))
    if not layout.is_safe_id(identity):
        raise ReadError(f"{layout.summary_file(result_dir)} names an unsafe group id: {identity!r}")
    host = layout.record_host(record)
    if not layout.is_safe_host(host):
        raise ReadError(f"{layout.summary_file(result_dir)} names an unsafe host: {host!r}")
    group_dir = layout.group_dir(result_dir, identity, host)
    definition = optional_json(group_dir / layout.DEFINITION)
    runs: dict[str, Mapping[str, Any] | None] = {}
    run_files: dict[str, str | None] = {}
    for variant in VARIANTS:
        found = read_run(group_dir / variant)
        run_files[variant], runs[variant] = found if found is not None else (None, None)
    return GroupEvidence(
        record=record,
        directory=group_dir,
        definition=definition if isinstance(definition, dict) else {},
        grade=read_grade(group_dir, record),
        grade_file=grade_file(record),
        review=optional_json(group_dir / layout.SEMANTIC_GRADE),
        runs=runs,
        run_files=run_files,
    )


def select_groups(summary: Mapping[str, Any], group: str | None) -> list[Mapping[str, Any]]:
    """The summarised groups selected by position (`^\\d+$`) or id; all when `group` is None."""
    records: list[Mapping[str, Any]] = [g for g in summary["groups"] if isinstance(g, dict)]
    if group is None:
        return records
    if _POSITION.fullmatch(group):
        chosen = [r for r in records if r.get("position") == int(group)]
    else:
        chosen = [r for r in records if r.get("id") == group]
    if not chosen:
        known = ", ".join(f"{r.get('position')}={r.get('id')}" for r in records) or "none"
        raise ReadError(
            f"Unknown group selector: {group} (this result has groups {known}; "
            "give an id or a 1-based position)"
        )
    return chosen


def run_cost(run: Mapping[str, Any]) -> float | None:
    """The total cost a run record reports, if any."""
    usage = run.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("cost"), dict):
        total = usage["cost"].get("total")
        if isinstance(total, int | float):
            return float(total)
    return None


def cannot_run_facts(invocation: Any) -> list[dict[str, str]]:
    """The invocation's `cannotRun` entries (group, host, reason), the well-formed ones."""
    facts = mapping(invocation).get("cannotRun")
    keys = ("group", "host", "reason")
    return [
        {key: str(fact[key]) for key in keys}
        for fact in (facts if isinstance(facts, list) else [])
        if isinstance(fact, Mapping) and all(key in fact for key in keys)
    ]
