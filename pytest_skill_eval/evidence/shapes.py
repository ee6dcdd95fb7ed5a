"""What the readers of a result rely on in each evidence file, checked before any view reads it.

These are the reader's side of `records.py`: the fields a view, a comparison, an aggregate, a
review, a verify or a merge indexes or iterates, with the types it assumes. Fields a reader
looks up with `.get` and tolerates missing are `NotRequired`; unknown fields are allowed (older
and newer evidence both read). `evidence.read` validates each file against its shape (strict:
no coercion), so a damaged file is one line naming the file and the place, never a traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, NotRequired

from pydantic import AfterValidator, Field, TypeAdapter

# pydantic reads TypedDicts from typing_extensions only, before Python 3.12.
from typing_extensions import TypedDict

from . import layout

# `float` accepts integers too (strict mode allows int → float, never bool or str).
Number = float


def _one_level(name: str) -> str:
    if not layout.is_safe_id(name):
        raise ValueError("an unsafe id (it would leave its directory)")
    return name


def _host(name: str) -> str:
    if not layout.is_safe_host(name):
        raise ValueError("an unsafe host name (it would leave its directory)")
    return name


# A count of trials or runs: never negative.
Count = Annotated[int, Field(ge=0)]

# An interval is a pair [low, high].
Interval = Annotated[list[Number], Field(min_length=2, max_length=2)]

# Ids and hosts become directory names: a damaged record must not lead a reader elsewhere.
SafeId = Annotated[str, AfterValidator(_one_level)]
SafeHost = Annotated[str, AfterValidator(_host)]


class Check(TypedDict):
    """One check of a deterministic grade."""

    id: str
    variant: NotRequired[str]
    kind: NotRequired[str]
    state: str


class Side(TypedDict):
    """One variant's outcome of a comparison."""

    state: str


class Comparison(TypedDict):
    """One comparison of a deterministic grade."""

    id: str
    kind: NotRequired[str]
    transition: str
    baseline: NotRequired[Side]
    candidate: NotRequired[Side]


class Grade(TypedDict):
    """`deterministic-grade.json` as the views, aggregates and comparisons read it."""

    state: NotRequired[str]
    checks: NotRequired[list[Check]]
    comparisons: NotRequired[list[Comparison]]
    errors: NotRequired[list[dict[str, Any]]]
    evidence: NotRequired[dict[str, Any]]


class GroupError(TypedDict):
    """A group-level problem."""

    kind: NotRequired[str]
    message: NotRequired[str]
    artifact: NotRequired[str]


class Group(TypedDict):
    """`group.json` (or its fallback), and each group of `summary.json`."""

    id: SafeId
    position: NotRequired[int | None]
    state: str
    variants: NotRequired[dict[str, str]]
    grade: NotRequired[str | None]
    errors: NotRequired[list[GroupError]]
    trial: NotRequired[int]
    artifacts: NotRequired[dict[str, str | None]]
    completedAt: NotRequired[str]
    host: NotRequired[SafeHost]


class Budget(TypedDict):
    """Spend against the ceiling."""

    maxCost: Number
    spent: Number
    exhausted: bool


class Summary(TypedDict):
    """`summary.json`."""

    id: NotRequired[str]
    trial: NotRequired[int]
    state: str
    groups: list[Group]
    completedAt: NotRequired[str]
    budget: NotRequired[Budget]


class InvocationGroup(TypedDict):
    """One group of a loaded definition."""

    id: str
    position: NotRequired[int]
    path: NotRequired[str]
    sha256: NotRequired[str]


class InvocationDefinition(TypedDict):
    """One loaded definition file."""

    path: NotRequired[str]
    kind: NotRequired[str]
    id: NotRequired[str]
    groups: NotRequired[list[InvocationGroup]]


class Invocation(TypedDict):
    """`invocation.json`."""

    id: NotRequired[str]
    root: NotRequired[str]
    definitions: NotRequired[list[InvocationDefinition]]
    selection: NotRequired[dict[str, Any]]
    provider: NotRequired[dict[str, Any]]
    failOn: NotRequired[str]
    alpha: NotRequired[float]  # the significance gate's, under failOn significant-regression
    startedAt: NotRequired[str]
    nonce: NotRequired[str]
    hosts: NotRequired[list[str]]
    identicalArms: NotRequired[bool]
    flakyGate: NotRequired[dict[str, Any]]


class VariantDeclaration(TypedDict):
    """One variant of a group definition, as trigger rates read it."""

    skills: NotRequired[list[Any] | None]
    target: NotRequired[int | None]


class Definition(TypedDict):
    """`definition.json`: the group as declared, as the views, reviews and rates read it."""

    type: NotRequired[str | None]
    input: NotRequired[dict[str, Any] | None]
    variants: NotRequired[dict[str, VariantDeclaration] | None]
    expectations: NotRequired[list[Any] | None]
    review_questions: NotRequired[list[Any] | None]


class RunResources(TypedDict):
    """The resource snapshots a run recorded."""

    skills: NotRequired[list[Any] | None]


class Activation(TypedDict):
    """Whether the target skill was read."""

    targetRead: NotRequired[bool | None]
    firstReadTurn: NotRequired[int | None]
    readTurns: NotRequired[list[int]]
    successfulReadPaths: NotRequired[list[str]]


class ToolCall(TypedDict):
    """One tool call of a turn."""

    toolCallId: NotRequired[str | None]
    toolName: NotRequired[str | None]


class ChangeSet(TypedDict):
    """Paths created, modified and deleted (`path_b64` and other keys beside them are free)."""

    created: NotRequired[list[Any] | None]
    modified: NotRequired[list[Any] | None]
    deleted: NotRequired[list[Any] | None]


class TurnWorkspace(TypedDict):
    """What a turn changed in the workspace."""

    changesSincePrevious: NotRequired[ChangeSet | None]


class Turn(TypedDict):
    """One turn of a run."""

    turn: NotRequired[int]
    toolActivity: NotRequired[list[ToolCall] | None]
    workspace: NotRequired[TurnWorkspace | None]


class Effects(TypedDict):
    """What a run changed, by kind (created, modified, deleted)."""

    changes: NotRequired[ChangeSet | None]


class Process(TypedDict):
    """How the subject's process ended."""

    protocolErrors: NotRequired[list[Any] | None]
    parseErrors: NotRequired[list[Any] | None]


class Run(TypedDict):
    """`run.json` (or `run-error.json`)."""

    variant: NotRequired[str]
    state: str
    nonce: NotRequired[str]
    prompt: NotRequired[str | None]
    prompts: NotRequired[list[str]]
    turns: NotRequired[list[Turn]]
    successfulReadPaths: NotRequired[list[str]]
    activation: NotRequired[Activation]
    response: NotRequired[str | None]
    usage: NotRequired[dict[str, Any] | None]
    spend: NotRequired[dict[str, Any]]
    effects: NotRequired[Effects | None]
    artifacts: NotRequired[dict[str, str | None]]
    error: NotRequired[dict[str, Any] | None]
    workspace: NotRequired[str]
    tools: NotRequired[list[str]]
    commands: NotRequired[list[dict[str, Any]]]
    model: NotRequired[dict[str, Any]]
    provider: NotRequired[dict[str, Any]]
    binary: NotRequired[dict[str, Any]]
    pi: NotRequired[dict[str, Any]]  # results written before `binary`
    environment: NotRequired[dict[str, Any]]
    process: NotRequired[Process]
    hint: NotRequired[str | None]
    host: NotRequired[dict[str, Any]]
    resources: NotRequired[RunResources]


class TrialRow(TypedDict):
    """One trial of an aggregate."""

    id: SafeId
    state: str


class AggregateInputs(TypedDict):
    """Whether every trial ran from the same inputs."""

    identical: bool
    fingerprints: NotRequired[list[dict[str, Any]]]


class Rate(TypedDict):
    """A pass rate and its interval."""

    passRate: NotRequired[Number | None]
    interval: NotRequired[Interval | None]


class Consistency(TypedDict):
    """pass@k and pass^k."""

    k: int
    passAtK: Number
    passHatK: Number


# Counts of pass, fail and unavailable ("pass" is a keyword: the functional form).
Counts = TypedDict(
    "Counts",
    {
        "pass": NotRequired[Count | None],
        "fail": NotRequired[Count | None],
        "unavailable": NotRequired[Count | None],
    },
)


class AggregateCheck(Counts):
    """One check over the trials."""

    id: str
    variant: NotRequired[str]
    kind: NotRequired[str]
    passRate: NotRequired[Number | None]
    interval: NotRequired[Interval | None]
    consistency: NotRequired[list[Consistency]]


class SampleSize(TypedDict):
    """Paired trials needed to separate an unresolved comparison."""

    more: Count
    pairs: Count


class AggregateComparison(TypedDict):
    """One comparison over the trials."""

    id: str
    kind: NotRequired[str]
    baseline: NotRequired[Counts]
    candidate: NotRequired[Counts]
    transitions: NotRequired[dict[str, Count]]
    rates: NotRequired[dict[str, Rate]]
    discordant: NotRequired[dict[str, Count]]
    mcnemarP: NotRequired[Number | None]
    differenceUnresolved: bool
    sampleSize: NotRequired[SampleSize | None]
    sequential: NotRequired[dict[str, Any]]


class TriggerCountsFields(TypedDict):
    """How often a target was read among the runs that observed it."""

    read: NotRequired[Count | None]
    observed: NotRequired[Count | None]
    rate: NotRequired[Number | None]
    interval: NotRequired[Interval | None]
    excluded: NotRequired[dict[str, Count] | None]
    unobserved: NotRequired[Count | None]


def _read_among_observed(counts: TriggerCountsFields) -> TriggerCountsFields:
    if (counts.get("read") or 0) > (counts.get("observed") or 0):
        raise ValueError("more runs read the target than observed it")
    return counts


TriggerCounts = Annotated[TriggerCountsFields, AfterValidator(_read_among_observed)]


class TriggerVariant(TypedDict):
    """One variant's targets and its two rates."""

    targets: NotRequired[list[Any]]
    activation: NotRequired[TriggerCounts]
    falseActivation: NotRequired[TriggerCounts]


class TriggerDifference(TypedDict):
    """Candidate rate minus baseline rate, with its interval."""

    difference: Number
    interval: Interval


class TriggerRate(TypedDict):
    """Activation and false activation rates of one target skill."""

    skill: NotRequired[dict[str, Any]]
    groups: NotRequired[list[str]]
    variants: NotRequired[dict[str, TriggerVariant]]
    difference: NotRequired[dict[str, TriggerDifference | None]]


class AggregateGroup(TypedDict):
    """One group over the trials."""

    id: SafeId
    trials: int
    checks: list[AggregateCheck]
    comparisons: list[AggregateComparison]
    host: NotRequired[SafeHost]
    adaptive: NotRequired[dict[str, Any]]


class Aggregate(TypedDict):
    """`aggregate.json`."""

    kind: NotRequired[str]
    id: NotRequired[str]
    state: NotRequired[str]
    requestedTrials: NotRequired[int]
    trials: NotRequired[list[TrialRow]]
    inputs: NotRequired[AggregateInputs]
    groups: NotRequired[list[AggregateGroup]]
    completedAt: NotRequired[str]
    budget: NotRequired[Budget]
    adaptive: NotRequired[dict[str, Any]]
    noiseFloor: NotRequired[dict[str, Any]]
    crossHost: NotRequired[list[dict[str, Any]]]
    triggerRates: NotRequired[list[TriggerRate]]


class Manifest(TypedDict):
    """A group's `manifest.json`."""

    files: dict[str, str]
    directories: NotRequired[list[str]]  # format 2: every directory below the group
    path_b64: NotRequired[dict[str, str]]


class SealLeaf(TypedDict):
    """One leaf of the seal."""

    name: str
    sha256: str | None
    groups: NotRequired[list[str]]


class Seal(TypedDict):
    """`seal.json`."""

    leaves: list[SealLeaf]
    root: str


class ShardPlace(TypedDict):
    """Which shard K of N."""

    index: int
    count: int


class Shard(TypedDict):
    """`shard.json`, as a merge reads it."""

    kind: str
    plan: NotRequired[str]
    planSha256: NotRequired[str]
    shard: ShardPlace
    budget: NotRequired[Budget | None]
    ledger: NotRequired[str | None]
    startedAt: str
    completedAt: str


# Each adapter is built at its first use: building them all cost about 0.1 s of CPU at import,
# which every xdist worker paid and none needs (a worker writes evidence, it reads none back).
_SHAPES: dict[str, Any] = {
    "SUMMARY": Summary,
    "GROUP": Group,
    "RUN": Run,
    "GRADE": Grade,
    "INVOCATION": Invocation,
    "AGGREGATE": Aggregate,
    "MANIFEST": Manifest,
    "SEAL": Seal,
    "SHARD": Shard,
    "DEFINITION": Definition,
    "OBJECT": dict[str, Any],
}

if TYPE_CHECKING:
    SUMMARY: TypeAdapter[Summary]
    GROUP: TypeAdapter[Group]
    RUN: TypeAdapter[Run]
    GRADE: TypeAdapter[Grade]
    INVOCATION: TypeAdapter[Invocation]
    AGGREGATE: TypeAdapter[Aggregate]
    MANIFEST: TypeAdapter[Manifest]
    SEAL: TypeAdapter[Seal]
    SHARD: TypeAdapter[Shard]
    DEFINITION: TypeAdapter[Definition]
    OBJECT: TypeAdapter[dict[str, Any]]


def __getattr__(name: str) -> TypeAdapter[Any]:
    """The adapter named `name` (`RUN`, `SEAL`, ...), built once on first use."""
    if name not in _SHAPES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    adapter: TypeAdapter[Any] = TypeAdapter(_SHAPES[name])
    globals()[name] = adapter  # later lookups find the module attribute directly
    return adapter
