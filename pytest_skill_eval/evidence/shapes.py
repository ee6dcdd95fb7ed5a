"""The reader's validators: each evidence file checked, before any view reads it, against its
one description in `records.py` (or `aggregates.py`).

`evidence.read` validates each file strictly (no coercion), so a damaged file is one line
naming the file and the place, never a traceback. Unknown fields pass (pydantic ignores extra
keys of a TypedDict): older and newer evidence both read. Nothing here describes a file again.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from . import aggregates, records, skill_records

# Each adapter is built at its first use: building them all cost about 0.1 s of CPU at import,
# which every xdist worker paid and none needs (a worker writes evidence, it reads none back).
_RECORDS: dict[str, object] = {
    "SUMMARY": records.SummaryRecord,
    "GROUP": records.GroupRecord,
    "RUN": records.RunRecord,
    "GRADE": records.GradeRecord,
    "INVOCATION": records.InvocationRecord,
    "AGGREGATE": aggregates.AggregateRecord,
    "MANIFEST": records.ManifestRecord,
    "SEAL": records.SealRecord,
    "DEFINITION": records.DefinitionRecord,
    "OFFERED_SKILLS": skill_records.OfferedSkillsRecord,
    "SKILL_WARNINGS": skill_records.SkillWarningsRecord,
    "OBJECT": dict[str, object],  # a JSON object, whatever it holds
}

if TYPE_CHECKING:
    SUMMARY: TypeAdapter[records.SummaryRecord]
    GROUP: TypeAdapter[records.GroupRecord]
    RUN: TypeAdapter[records.RunRecord]
    GRADE: TypeAdapter[records.GradeRecord]
    INVOCATION: TypeAdapter[records.InvocationRecord]
    AGGREGATE: TypeAdapter[aggregates.AggregateRecord]
    MANIFEST: TypeAdapter[records.ManifestRecord]
    SEAL: TypeAdapter[records.SealRecord]
    DEFINITION: TypeAdapter[records.DefinitionRecord]
    OFFERED_SKILLS: TypeAdapter[skill_records.OfferedSkillsRecord]
    SKILL_WARNINGS: TypeAdapter[skill_records.SkillWarningsRecord]
    OBJECT: TypeAdapter[dict[str, object]]


def lenient(record: Any) -> TypeAdapter[Any]:
    """The reader's validator of the file `record` describes: its fields' types and safety
    constraints enforced, its `NotRequired` fields tolerated missing, unknown fields allowed."""
    return TypeAdapter(record)


def __getattr__(name: str) -> TypeAdapter[Any]:
    """The adapter named `name` (`RUN`, `SEAL`, ...), built once on first use."""
    if name not in _RECORDS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    adapter = lenient(_RECORDS[name])
    globals()[name] = adapter  # later lookups find the module attribute directly
    return adapter


def build_all() -> None:
    """Build every adapter not built yet, as its first use would."""
    module = sys.modules[__name__]
    for name in _RECORDS:
        getattr(module, name)
