"""The shapes of a plan and of a shard record, validated before a merge or a shard trusts them.

Both files travel between machines (a plan to every shard, each shard's record to the merge),
so every field is checked here, once: a missing field, a string where a number belongs or an
id that would leave its directory is one line naming the file and the field, never a traceback.
Ids that name directories obey the one rule every reader of evidence uses
(`evidence.layout.is_safe_id`).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from ..evidence import layout

_HEX = r"^[0-9a-f]{64}$"


def _safe_id(value: str) -> str:
    if not layout.is_safe_id(value):
        raise ValueError(f"{value!r} is not a safe id (one directory level: no '/', '\\', '..')")
    return value


def _safe_host(value: str) -> str:
    if not layout.is_safe_host(value):
        raise ValueError(f"{value!r} is not a host name")
    return value


def _relative(value: str) -> str:
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts or "\\" in value:
        raise ValueError(f"{value!r} is not a path relative to the definition root")
    return value


SafeId = Annotated[str, AfterValidator(_safe_id)]
SafeHost = Annotated[str, AfterValidator(_safe_host)]
RelativePath = Annotated[str, AfterValidator(_relative)]
Sha256 = Annotated[str, Field(pattern=_HEX)]
Variant = Literal["baseline", "candidate"]
Count = Annotated[int, Field(ge=1)]
Money = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Model(BaseModel):
    # Strict: "2" is not 2 and 1.0 is not 1; unknown fields are refused, not ignored.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# ---------------------------------------------------------------------------------------------
# The plan (`skill-eval plan`)


class PlannedGroupRef(_Model):
    """One group of a planned definition, as `invocation.json` lists it."""

    id: SafeId
    position: Count
    path: RelativePath
    sha256: Sha256


class PlannedDefinition(_Model):
    """One definition file the plan loaded."""

    path: RelativePath
    kind: str
    id: str
    groups: list[PlannedGroupRef]


class PlannedGroup(_Model):
    """A selected group: where it is, its fingerprints, and its definition as written."""

    path: RelativePath
    position: Count
    sha256: Sha256
    resources: str
    definition: dict[str, Any]


class PlanSelection(_Model):
    """What the plan selected: group, variant, trials and the chosen hosts."""

    group: str | None
    variant: Variant | None
    trials: Count
    hosts: list[SafeHost] | None = None


class PlanProvider(_Model):
    """Scripts or cassettes (relative to the root) and the record mode."""

    cassettes: RelativePath | None
    record: Literal["none", "once", "all"]
    mode: Literal["live", "record", "replay"]


class PlannedResult(_Model):
    """The pinned result id of one trial."""

    trial: Count
    id: SafeId


class PlannedUnit(_Model):
    """One work unit: a group of a trial, its variants, its hosts."""

    group: SafeId
    trial: Count
    position: Count
    variants: Annotated[list[Variant], Field(min_length=1)]
    seconds: Money | None = None
    hosts: Annotated[list[SafeHost], Field(min_length=1)] | None = None


class PlannedCannotRun(_Model):
    """A selected group a chosen host cannot run: its items there are skips, with no unit."""

    group: SafeId
    host: SafeHost
    reason: str


class PlanModel(_Model):
    """A whole plan file."""

    schema_version: Literal[1]
    kind: Literal["plan"]
    id: SafeId
    root: str
    definitions: list[PlannedDefinition]
    groups: dict[SafeId, PlannedGroup]
    selection: PlanSelection
    pins: dict[str, str]
    provider: PlanProvider
    failOn: Literal["infrastructure", "candidate", "any", "regression"]
    maxCost: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None
    results: list[PlannedResult]
    aggregate: SafeId | None
    units: list[PlannedUnit]
    cannotRun: list[PlannedCannotRun] = []
    createdAt: str

    @model_validator(mode="after")
    def _consistent(self) -> PlanModel:
        trials = self.selection.trials
        if [r.trial for r in self.results] != list(range(1, trials + 1)):
            raise ValueError(f"results must list trials 1 to {trials} in order, once each")
        ids = [
            self.id,
            *(r.id for r in self.results),
            *([self.aggregate] if self.aggregate else []),
        ]
        if len(set(ids)) != len(ids):
            raise ValueError("the plan, result and aggregate ids must differ")
        if (self.aggregate is None) != (trials == 1):
            raise ValueError("aggregate must be an id exactly when there are several trials")
        seen: set[tuple[str, int]] = set()
        for unit in self.units:
            if unit.group not in self.groups:
                raise ValueError(f"unit {unit.group}@{unit.trial} names a group not in groups")
            if not 1 <= unit.trial <= trials:
                raise ValueError(f"unit {unit.group}@{unit.trial} is not a planned trial")
            if (unit.group, unit.trial) in seen:
                raise ValueError(f"unit {unit.group}@{unit.trial} is listed twice")
            seen.add((unit.group, unit.trial))
        return self


# ---------------------------------------------------------------------------------------------
# A shard's record (`shard.json`)


class ShardPosition(_Model):
    """Shard K of N."""

    index: Count
    count: Count

    @model_validator(mode="after")
    def _within(self) -> ShardPosition:
        if self.index > self.count:
            raise ValueError(f"index {self.index} is beyond count {self.count}")
        return self


class ShardUnit(_Model):
    """What one unit on one host ended as in the shard (None: never finalised)."""

    group: SafeId
    host: SafeHost
    trial: Count
    state: str | None


class ShardBudget(_Model):
    """The spend the shard saw: its share of the ceiling, or the ledger service's state."""

    maxCost: Money
    spent: Money
    exhausted: bool


class ShardModel(_Model):
    """A whole `shard.json`."""

    schema_version: Literal[1]
    kind: Literal["shard"]
    plan: SafeId
    planSha256: Sha256
    shard: ShardPosition
    host: str
    results: dict[str, SafeId]
    units: list[ShardUnit]
    budget: ShardBudget | None
    ledger: str | None
    startedAt: str
    completedAt: str


def problem(error: ValidationError) -> str:
    """Pydantic's first error as `field <pointer>: <message>` (one line; a rule over several
    fields names them in its message)."""
    first = error.errors(include_url=False)[0]
    location = "/".join(str(part) for part in first["loc"])
    message = " ".join(str(first["msg"]).removeprefix("Value error, ").split())
    return f"field {location}: {message}" if location else message


def parse_plan(data: object, path: Path) -> tuple[PlanModel | None, str]:
    """`data` (read from `path`) as a plan, or None and why it is not one, in one line."""
    try:
        return PlanModel.model_validate(data), ""
    except ValidationError as error:
        return None, f"{path}: {problem(error)}"


def check_shard(data: Any, path: Path) -> str | None:
    """Why `data` (read from `path`) is not a valid shard record, in one line; None when it is."""
    return _check(ShardModel, data, path)


def _check(model: type[BaseModel], data: Any, path: Path) -> str | None:
    """Why `data` (read from `path`) is not a valid `model`, in one line; None when it is."""
    try:
        model.model_validate(data)
    except ValidationError as error:
        return f"{path}: {problem(error)}"
    return None
