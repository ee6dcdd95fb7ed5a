"""The one reader of saved evidence: results, aggregates, groups, runs (and fallbacks), grades.

The terminal summary, `summary.json`, aggregates, every view and the review read through here,
so a fallback name or a layout rule is honoured by all of them or by none.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import TypeAdapter, ValidationError

from ..common.entries import open_regular
from ..definitions import VARIANTS
from ..errors import SkillEvalError
from . import layout, shapes
from .aggregates import AggregateRecord
from .memo import memo_in_force
from .memo import read_fresh as read_fresh  # the reader's API: `read.read_fresh()`
from .memo import read_once as read_once  # and `read.read_once()`
from .records import (
    GradeRecord,
    GroupRecord,
    InvocationRecord,
    RunRecord,
    SummaryRecord,
)
from .skill_records import OfferedSkillsRecord, SkillWarningsRecord

_POSITION = re.compile(r"[0-9]+")

Record = TypeVar("Record")

# Bounds on one JSON evidence file. The writers stay far below both (a run record is a few
# hundred KiB, nests under 20 levels); the reader refuses more before parsing, so a hostile
# file can neither exhaust memory nor blow Python's recursion in the parser or in a view.
MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_JSON_DEPTH = 100

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class ReadError(SkillEvalError):
    """A result cannot be read as asked: unknown selector, unreadable or damaged evidence."""


class DamagedEvidenceError(ReadError):
    """An evidence file is unreadable, too large, too deep, not JSON, or not the shape its
    readers rely on; the message is `<file>: <what is wrong>`."""

    exit_code = 2


def damaged(path: Path, problem: str) -> DamagedEvidenceError:
    """The one-line error for a damaged evidence file."""
    return DamagedEvidenceError(f"{path}: {problem}; the evidence is damaged")


def unreadable(error: OSError) -> DamagedEvidenceError:
    """The one-line error for an entry the file system refused to look at or copy."""
    where = f"{error.filename}: " if error.filename is not None else ""
    return DamagedEvidenceError(f"{where}{error.strerror or error}")


def _read_bytes(path: Path) -> bytes:
    """The bytes of a regular file, at most MAX_JSON_BYTES; never follows a symlink there,
    never opens a FIFO or device."""
    try:
        opened = open_regular(path)
    except OSError as error:
        raise damaged(path, f"unreadable ({error.strerror or error})") from None
    if not isinstance(opened, int):
        kind = "a symbolic link" if stat.S_ISLNK(opened.st_mode) else "a special file"
        if stat.S_ISDIR(opened.st_mode):
            kind = "a directory"
        raise damaged(path, f"{kind} where a JSON file belongs")
    with os.fdopen(opened, "rb") as handle:
        try:
            data = handle.read(MAX_JSON_BYTES + 1)
        except OSError as error:
            raise damaged(path, f"unreadable ({error.strerror or error})") from None
    if len(data) > MAX_JSON_BYTES:
        raise damaged(path, f"larger than {MAX_JSON_BYTES // (1024 * 1024)} MiB")
    return data


def evidence_bytes(path: Path) -> bytes:
    """The bytes of a JSON evidence file as `read_evidence_json` reads them (a regular file,
    bounded), for a caller that hashes what it then parses (`parse_evidence_json`)."""
    return _read_bytes(path)


def json_depth(text: str) -> int:
    """How deeply `text` nests arrays and objects, counted without recursion (strings skipped)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(_STEP[c] for c in brackets), default=0)


@overload
def read_evidence_json(path: Path, shape: None = None) -> Any: ...
@overload
def read_evidence_json(path: Path, shape: TypeAdapter[Record]) -> Record: ...
def read_evidence_json(path: Path, shape: TypeAdapter[Any] | None = None) -> Any:
    """Read one JSON evidence file, bounded in size and depth and, given `shape`, validated
    against its description (`records.py`); any damage is a DamagedEvidenceError naming it.

    Inside `read_once`, a file read before is parsed again from the text read then (a fresh
    value: no caller sees another's changes), checked against a shape it was not yet checked
    against."""
    memo = memo_in_force()
    if memo is None:
        return parse_evidence_json(path, _read_bytes(path), shape)
    seen = memo.get(path)
    if seen is None:
        text = _evidence_text(path, _read_bytes(path))
        value = _evidence_value(path, text, shape)
        memo.keep(path, text, shape)
        return value
    text, checked = seen
    value = json.loads(text)
    if shape is not None and shape not in checked:
        check_shape(path, value, shape)
        checked.add(shape)
    return value


@overload
def parse_evidence_json(path: Path, data: bytes, shape: None = None) -> Any: ...
@overload
def parse_evidence_json(path: Path, data: bytes, shape: TypeAdapter[Record]) -> Record: ...
def parse_evidence_json(path: Path, data: bytes, shape: TypeAdapter[Any] | None = None) -> Any:
    """The JSON value of `data`, the bytes of evidence file `path` (so a caller that hashes
    them parses exactly what it hashed), bounded and validated as `read_evidence_json` does."""
    return _evidence_value(path, _evidence_text(path, data), shape)


def _evidence_text(path: Path, data: bytes) -> str:
    """The text of evidence file `path`'s bytes: bounded in size and depth, UTF-8."""
    if len(data) > MAX_JSON_BYTES:
        raise damaged(path, f"larger than {MAX_JSON_BYTES // (1024 * 1024)} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise damaged(path, f"not UTF-8 (byte {error.start})") from None
    if json_depth(text) > MAX_JSON_DEPTH:
        raise damaged(path, f"nested deeper than {MAX_JSON_DEPTH} levels")
    return text


def _evidence_value(path: Path, text: str, shape: TypeAdapter[Any] | None) -> Any:
    """The JSON value of `text` (read from `path`), checked against `shape` when given."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise damaged(path, f"not valid JSON ({error})") from None
    if shape is not None:
        check_shape(path, value, shape)
    return value


def check_shape(path: Path, value: Any, shape: TypeAdapter[Any]) -> None:
    """Validate `value` (read from `path`) against `shape`; the first problem names its place."""
    try:
        shape.validate_python(value, strict=True)
    except ValidationError as error:
        first = error.errors()[0]
        where = "/" + "/".join(str(part) for part in first["loc"])
        problem = first["msg"].removeprefix("Value error, ")
        raise damaged(path, f"at {where}: {problem[:1].lower()}{problem[1:]}") from None


@overload
def optional_json(path: Path, shape: None = None) -> Any: ...
@overload
def optional_json(path: Path, shape: TypeAdapter[Record]) -> Record | None: ...
def optional_json(path: Path, shape: TypeAdapter[Any] | None = None) -> Any:
    """A JSON evidence file that may be absent: None when it is."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise damaged(path, f"unreadable ({error.strerror or error})") from None
    return read_evidence_json(path, shape)


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else an empty one (evidence may lack optional parts)."""
    return value if isinstance(value, Mapping) else {}


# ---------------------------------------------------------------------------------------------
# Results and aggregates


def present(path: Path) -> bool:
    """Whether an entry exists at `path` (a file or not, a symlink or not); an entry that
    cannot even be looked up (a name too long, a loop) is damage naming it."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        raise damaged(path, f"unreadable ({error.strerror or error})") from None
    return True


def is_aggregate(directory: Path) -> bool:
    """Whether a directory holds an aggregate over trials rather than one result."""
    return present(layout.aggregate_file(directory))


def is_finished(result_dir: Path) -> bool:
    """Whether a result directory has its summary (written last)."""
    try:
        return layout.summary_file(result_dir).is_file()
    except OSError:
        return False


def load_summary(result_dir: Path) -> SummaryRecord:
    """`summary.json` of a result directory, or a ReadError saying what the directory lacks."""
    path = layout.summary_file(result_dir)
    if not present(path):
        raise ReadError(
            f"{result_dir} has no {layout.SUMMARY} or {layout.AGGREGATE}: it is not a finished "
            "result. Pass a result id or directory under .skill-eval/runs."
        )
    return read_evidence_json(path, shapes.SUMMARY)


def summary_or_none(result_dir: Path) -> SummaryRecord | None:
    """`summary.json` when the result has one (an interrupted result may not)."""
    path = layout.summary_file(result_dir)
    return optional_json(path, shapes.SUMMARY)


def load_invocation(result_dir: Path) -> InvocationRecord | None:
    """`invocation.json` when present and an object."""
    return optional_json(layout.invocation_file(result_dir), shapes.INVOCATION)


def load_aggregate(aggregate_dir: Path) -> AggregateRecord:
    """`aggregate.json`, which must be an object."""
    path = layout.aggregate_file(aggregate_dir)
    return read_evidence_json(path, shapes.AGGREGATE)


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
        if present(path):
            return read_evidence_json(path, shapes.GROUP)
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
        if present(path):
            return name, read_evidence_json(path, shapes.RUN)
    return None


def read_offered(variant_dir: Path) -> OfferedSkillsRecord | None:
    """The skills the host offered a variant's model (`offered-skills.json`), when recorded."""
    return optional_json(variant_dir / layout.OFFERED_SKILLS, shapes.OFFERED_SKILLS)


def skill_warnings(variant_dir: Path) -> SkillWarningsRecord | None:
    """What the host's skill loader warned of a variant's skills (None: it reports nothing)."""
    return optional_json(variant_dir / layout.SKILL_WARNINGS, shapes.SKILL_WARNINGS)


def grade_file(record: Mapping[str, Any]) -> str | None:
    """The grade file a group record names (canonical or fallback)."""
    name = mapping(record.get("artifacts")).get("grade")
    return name if isinstance(name, str) and name else None


def read_grade(group_dir: Path, record: Mapping[str, Any]) -> GradeRecord | None:
    """The deterministic grade a group record names, when it exists and is an object."""
    name = grade_file(record)
    if name is None:
        return None
    if not layout.is_safe_id(name):
        raise damaged(group_dir / layout.GROUP, f"names an unsafe grade file {name!r}")
    return optional_json(group_dir / name, shapes.GRADE)


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
    definition = optional_json(group_dir / layout.DEFINITION, shapes.DEFINITION)
    runs: dict[str, Mapping[str, Any] | None] = {}
    run_files: dict[str, str | None] = {}
    for variant in VARIANTS:
        found = read_run(group_dir / variant)
        run_files[variant], runs[variant] = found if found is not None else (None, None)
    return GroupEvidence(
        record=record,
        directory=group_dir,
        definition=definition or {},
        grade=read_grade(group_dir, record),
        grade_file=grade_file(record),
        review=optional_json(group_dir / layout.SEMANTIC_GRADE, shapes.OBJECT),
        runs=runs,
        run_files=run_files,
    )


def select_groups(summary: Mapping[str, Any], group: str | None) -> list[Mapping[str, Any]]:
    """The summarised groups selected by position (`^\\d+$`) or id, on every host it ran on, or
    on one host with `@host` (`2@codex`, `lint@codex`, as JUnit names a variant's item); all when
    `group` is None."""
    records: list[Mapping[str, Any]] = [g for g in summary["groups"] if isinstance(g, dict)]
    if group is None:
        return records
    selector, at, host = group.rpartition("@") if "@" in group else (group, "", "")
    if _POSITION.fullmatch(selector):
        chosen = [r for r in records if r.get("position") == int(selector)]
    else:
        chosen = [r for r in records if r.get("id") == selector]
    if at:
        chosen = [r for r in chosen if layout.record_host(r) == host]
    if not chosen:
        raise ReadError(
            f"Unknown group selector: {group} (this result has groups {_known_groups(records)}; "
            "give an id or a 1-based position, and @host for one host)"
        )
    return chosen


def _known_groups(records: list[Mapping[str, Any]]) -> str:
    """Each group once, `position=id`, with the hosts it ran on where any is not Pi's alone."""
    hosts: dict[tuple[object, object], list[str]] = {}
    for record in records:
        hosts.setdefault((record.get("position"), record.get("id")), []).append(
            layout.record_host(record)
        )
    return (
        ", ".join(
            f"{position}={group_id}"
            + ("" if names == [layout.DEFAULT_HOST] else f" (on {', '.join(names)})")
            for (position, group_id), names in hosts.items()
        )
        or "none"
    )


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
