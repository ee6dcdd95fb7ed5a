"""The shapes of the JSON records users read, so mypy checks their writers and readers.

Fields a record does not always carry are `NotRequired`; values the reference leaves open
(usage, effects, per-kind check details) stay `Any` where their shape belongs to another layer.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class RunError(TypedDict):
    """Why a run did not complete normally."""

    kind: str
    message: str
    cause: NotRequired[RunError | dict[str, str] | None]


class Activation(TypedDict):
    """Whether, and in which turns, the target skill was read."""

    targetRead: bool | None
    firstReadTurn: int | None
    readTurns: list[int]
    successfulReadPaths: list[str]


class RunArtifacts(TypedDict):
    """File names (in the variant directory) of what a run left; None when it left none."""

    events: str | None
    final: str | None
    stderr: str | None
    context: str | None
    transcript: str | None
    modelRequests: str | None


class SystemLayerRecord(TypedDict):
    """A system-wide or managed layer of the host, and how it was kept from the subject:
    `absent` (checked right before the subject started) or `hidden` (not visible to it)."""

    path: str
    kept: Literal["absent", "hidden"]


class HostBinaryRecord(TypedDict):
    """The host binary a run used, and what its configuration enforced where that is the
    host's to decide (Codex's sandbox)."""

    version: str
    command: str
    enforced: NotRequired[dict[str, Any]]
    # A Node host: the runtime it ran on ({kind: pinned|option, path, version}) and, for Pi,
    # the form that ran ({kind: stock} or {kind: bundle, sha256}).
    runtime: NotRequired[dict[str, str]]
    form: NotRequired[dict[str, str]]


class RunRecord(TypedDict):
    """`run.json` (or its fallback `run-error.json`), reference §5.3."""

    schema_version: int
    variant: str
    state: str
    evaluationType: str
    # A random id made when the run's record is first written: what the noise floor and the
    # significance gate count the run once by, wherever a copy of it lies (a reused run keeps
    # its origin's). Results from before it fall back to their record's content digest.
    nonce: NotRequired[str]
    prompt: str | None
    prompts: list[str]
    turns: list[dict[str, Any]]
    successfulReadPaths: list[str]
    # Declared tools whose calls this host cannot show, each with the reason.
    unobservableTools: NotRequired[dict[str, str]]
    activation: Activation
    response: str
    usage: dict[str, Any] | None
    # Requests the model endpoint received (loopback), else assistant replies observed (Pi
    # live); None where neither can be seen.
    modelCalls: NotRequired[int | None]
    # {"usd", "simulated"}: what the run cost, and whether it was only simulated.
    spend: NotRequired[dict[str, Any]]
    effects: dict[str, Any] | None
    contextObservationArtifact: dict[str, Any] | None
    artifacts: RunArtifacts
    error: RunError | dict[str, str] | None
    # Present once a subject started (or its variant was prepared).
    startedAt: NotRequired[str]
    completedAt: NotRequired[str]
    workspace: NotRequired[str]
    resources: NotRequired[dict[str, Any]]
    tools: NotRequired[list[str]]
    commands: NotRequired[list[dict[str, Any]]]
    model: NotRequired[dict[str, Any]]
    provider: NotRequired[dict[str, Any]]
    # The host's binary (every host, under one key; results before it kept Pi's under `pi`).
    binary: NotRequired[HostBinaryRecord]
    environment: NotRequired[dict[str, Any]]
    process: NotRequired[dict[str, Any]]
    hint: NotRequired[str | None]
    delivery: NotRequired[Any]
    # Every system-wide or managed layer of the host (none for Pi) and how it was kept out.
    systemLayers: NotRequired[list[SystemLayerRecord]]
    # {"name", "chosenBy": "definition"|"invocation", "declared"}: off Pi, or chosen by
    # --skill-eval-host; absent on a Pi run of a group declared for Pi.
    host: NotRequired[dict[str, Any]]
    # The inputs that determine the run, each hashed under its name (`run/inputs.py`).
    inputs: NotRequired[dict[str, str]]
    # `--skill-eval-reuse`: copied from an earlier sealed result (`result`, its seal `root`,
    # the source `run` record and its `sha256`), or why it was not (`notReused`).
    reused: NotRequired[dict[str, str]]
    notReused: NotRequired[str]
    # How many secrets were replaced, per file, when the run had any to replace.
    redactions: NotRequired[dict[str, Any]]
    # Only in the persistence fallback: the transcript that could not be written beside it.
    transcript: NotRequired[list[Any]]
    # --skill-eval-retries: each earlier (infrastructure-failed) attempt, in order, with its
    # state, error and evidence directory (`attempts/<n>`, relative to the variant's).
    attempts: NotRequired[list[dict[str, Any]]]


class EvidenceRef(TypedDict):
    """Which run record a grade was computed from."""

    path: str | None
    sha256: str | None


class GradeErrorEntry(TypedDict):
    """One reason a grade is `grade-error`; `id` names the expectation, None the system."""

    id: str | None
    reason: str


class GradeRecord(TypedDict):
    """`deterministic-grade.json` (or `deterministic-grade-error.json`)."""

    schema_version: int
    state: str
    evidence: dict[str, EvidenceRef]
    checks: list[dict[str, Any]]
    comparisons: list[dict[str, Any]]
    errors: list[GradeErrorEntry]


class GroupError(TypedDict):
    """A group-level problem: a record that could not be persisted, or a cancellation."""

    kind: str
    message: str
    artifact: NotRequired[str]


class GroupArtifacts(TypedDict):
    """File names of the group's grade and record (canonical or fallback)."""

    grade: str
    group: str


class GroupRecord(TypedDict):
    """`group.json` (or `group-error.json`); also each entry of `summary.json`'s groups."""

    id: str
    position: int | None
    state: str
    variants: dict[str, str]
    grade: str | None
    errors: list[GroupError]
    # Absent from the placeholder of a group that never finished.
    trial: NotRequired[int]
    artifacts: NotRequired[GroupArtifacts]
    completedAt: NotRequired[str]
    # The host the group ran on, only when it is not Pi (its directory is `<id>@<host>`).
    host: NotRequired[str]


class Budget(TypedDict):
    """Spend against `--skill-eval-max-cost`."""

    maxCost: float
    spent: float
    exhausted: bool


class SummaryRecord(TypedDict):
    """`summary.json`: one result (trial), written once, last."""

    schema_version: int
    id: str
    trial: int
    state: str
    groups: list[GroupRecord]
    completedAt: str
    budget: NotRequired[Budget]


class InvocationGroup(TypedDict):
    """One group of a loaded definition, identified by content."""

    id: str
    position: int
    path: str
    sha256: str


class InvocationDefinition(TypedDict):
    """One loaded definition file."""

    path: str
    kind: str
    id: str
    groups: list[InvocationGroup]


class Selection(TypedDict):
    """What the invocation selected."""

    group: str | list[str] | None  # one selector, or several in the order given
    variant: str | None
    trial: int
    trials: int


class InvocationRecord(TypedDict):
    """`invocation.json`: what a result was run from, written before any group starts."""

    schema_version: int
    id: str
    root: str
    definitions: list[InvocationDefinition]
    selection: Selection
    pins: Any
    provider: dict[str, Any]
    failOn: str
    alpha: NotRequired[float]  # the significance gate's, under failOn significant-regression
    startedAt: str
    # A random id every trial of one invocation shares: which results are one run's trials,
    # whatever their ids (a noise floor decides only as the trials of one invocation).
    nonce: NotRequired[str]
    # The hosts --skill-eval-host chose over each group's runtime.host, when it was given.
    hosts: NotRequired[list[str]]
    # The selected groups a chosen host cannot run: their items are skips, not runs.
    cannotRun: NotRequired[list[CannotRun]]
    identicalArms: NotRequired[bool]  # a noise-floor trial: the baseline arm is the candidate's
    flakyGate: NotRequired[dict[str, Any]]  # the newest noise floor's flaky checks: never gate
    # --skill-eval-resume: the result this one completes, its seal root (None: never sealed),
    # and each group carried over from it with the sha256 of its manifest.
    resumedFrom: NotRequired[dict[str, Any]]


class CannotRun(TypedDict):
    """A selected group one of the invocation's hosts cannot run, and why."""

    group: str
    host: str
    reason: str


class TrialRow(TypedDict):
    """One trial of an aggregate."""

    id: str
    state: str


class Fingerprint(TypedDict):
    """The inputs of a trial, compared across trials."""

    definitions: Any
    pins: Any


class AggregateInputs(TypedDict):
    """Whether every trial ran from the same inputs."""

    identical: bool
    fingerprints: list[Fingerprint]


class AggregateGroup(TypedDict):
    """Counts and statistics of one group over the trials."""

    id: str
    trials: int
    comparisons: list[dict[str, Any]]
    checks: list[dict[str, Any]]
    # Only off Pi: the host these trials ran on.
    host: NotRequired[str]
    # `--skill-eval-trials auto`: `{trialsUsed, stop}`, stop being resolved | max-trials |
    # budget-exhausted | incomplete | no-comparisons.
    adaptive: NotRequired[dict[str, Any]]
    # Per-arm usage facts; absent when no subject of the group started.
    usage: NotRequired[ArmUsage]
    # --skill-eval-retries: attempts beyond each run's first, over every trial (absent: none).
    retries: NotRequired[int]


class ArmFact(TypedDict):
    """One usage fact of one arm across trials: its mean and 95% t interval (None below two)."""

    mean: float | None
    interval: list[float] | None
    trials: int  # the runs that reported it


class UsageChange(TypedDict):
    """Candidate minus baseline of one fact, paired by trial (or, when an arm was reused,
    the difference of the arms' means with Welch's interval), and the ratio of their sums."""

    pairs: int
    difference: float | None
    interval: list[float] | None
    ratio: float | None
    method: NotRequired[str]  # `paired`, or `unpaired-welch` when an arm was reused
    unpaired: NotRequired[str]  # why the change is not paired


class AttemptsUsage(TypedDict):
    """Earlier attempts of one arm (`--skill-eval-retries`): spent, whatever their state."""

    runs: int  # earlier attempts whose subject started
    modelCalls: float | None
    costUsd: float | None


class ArmUsage(TypedDict):
    """Per-arm usage facts of a group (`analysis.usage`): tokens, calls, turns, time, cost."""

    runs: dict[str, int]  # variant → runs whose subject started
    arms: dict[str, dict[str, ArmFact]]  # variant → fact → values
    change: dict[str, UsageChange]  # fact → baseline→candidate
    simulated: bool  # some cost was priced but never paid (scripted, replayed)
    reused: NotRequired[dict[str, int]]  # variant → runs copied from an earlier result
    attempts: NotRequired[dict[str, AttemptsUsage]]  # variant → its earlier attempts
    # variant → cost this invocation spent: its own final runs and their earlier attempts, not
    # the reused runs (spent by the invocation that ran them)
    spentUsd: NotRequired[dict[str, float | None]]


class AdaptiveRun(TypedDict):
    """`--skill-eval-trials auto`: the sequential method and how many trials it ran."""

    method: str
    description: str
    alpha: float
    maxTrials: int
    trialsRun: int


class TriggerSkill(TypedDict):
    """A target skill by snapshot: its declared path and content sha256 (None if unknown)."""

    declaredPath: str
    sha256: str | None


class TriggerCounts(TypedDict):
    """How often the target was read among runs that observed it, and who was left out."""

    read: int
    observed: int
    rate: float | None
    interval: list[float] | None
    # Runs that ended invalid, infrastructure-failed or cancelled, by state: never "not read".
    excluded: dict[str, int]
    # Complete runs whose read could not be observed (an unavailable check).
    unobserved: int


class TriggerVariant(TypedDict):
    """One variant's targets (None: no target) and its two rates."""

    targets: list[TriggerSkill | None]
    activation: TriggerCounts
    falseActivation: TriggerCounts


class TriggerDifference(TypedDict):
    """Candidate rate minus baseline rate, with Newcombe's hybrid score 95% interval."""

    difference: float
    interval: list[float]


class TriggerRate(TypedDict):
    """Activation and false activation rates of one target skill over a suite and its trials."""

    skill: TriggerSkill
    groups: list[str]
    variants: dict[str, TriggerVariant]
    difference: dict[str, TriggerDifference | None]


class Consistency(TypedDict):
    """pass@k and pass^k of one check for k trials drawn from the n observed."""

    k: int
    passAtK: float
    passHatK: float


class AggregateRecord(TypedDict):
    """`aggregate.json`: counts and statistics over trials (reference §6.5)."""

    schema_version: int
    kind: str
    id: str
    state: str
    requestedTrials: int
    trials: list[TrialRow]
    inputs: AggregateInputs
    groups: list[AggregateGroup]
    completedAt: str
    budget: NotRequired[Budget]
    adaptive: NotRequired[AdaptiveRun]
    noiseFloor: NotRequired[dict[str, Any]]  # `--skill-eval-noise-floor` (`noise_floor.py`)
    # Groups run on several hosts: per check/comparison the counts on each host, and whether
    # they held on every host.
    crossHost: NotRequired[list[dict[str, Any]]]
    # The groups a chosen host cannot run, with the trials that said so: counted apart.
    cannotRun: NotRequired[list[dict[str, Any]]]
    # Absent from aggregates written before trigger rates were recorded.
    triggerRates: NotRequired[list[TriggerRate]]
