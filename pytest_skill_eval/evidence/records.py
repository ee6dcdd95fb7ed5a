"""The one description of each JSON evidence file: what its writer produces and its readers rely on.

Each file has one TypedDict here (`aggregates.py` holds the aggregate's). Its writer is checked
against it by mypy; `shapes.py` turns it into the reader's strict validator, so a view, a
comparison, a review, a verify or a merge never meets a shape it did not expect.

- A field an older result can lack, or a reader tolerates missing, is `NotRequired`.
- Unknown fields are allowed: older and newer evidence both read.
- Values the reference leaves open (usage, per-kind check details) stay `Any` where their shape
  belongs to another layer.
- The safety constraints sit on the fields as `Annotated` metadata (`constraints.py`): mypy
  ignores it, the reader's pydantic validation enforces it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

# pydantic reads TypedDicts from typing_extensions only, before Python 3.12.
from typing_extensions import TypedDict

from .constraints import Holds, Number, SafeHost, SafeId
from .inputs import RunResources
from .observed import (
    ContextArtifact,
    Delivery,
    Effects,
    ModelRecord,
    Process,
    ProviderRecord,
    RecordedUsage,
    SpendRecord,
    Turn,
)
from .skill_records import Activation

# ---------------------------------------------------------------------------------------------
# run.json (or its fallback run-error.json)


class RunError(TypedDict):
    """Why a run did not complete normally."""

    kind: str
    message: str
    cause: NotRequired[RunError | dict[str, str] | None]


# A reader meets errors of any shape in older results; it checks the parts it uses.
RecordedError = Annotated[RunError | dict[str, str] | None, Holds(dict[str, object] | None)]


class RunArtifacts(TypedDict):
    """File names (in the variant directory) of what a run left; None when it left none."""

    events: NotRequired[str | None]
    final: NotRequired[str | None]
    stderr: NotRequired[str | None]
    context: NotRequired[str | None]
    transcript: NotRequired[str | None]
    modelRequests: NotRequired[str | None]
    offeredSkills: NotRequired[str | None]


class SystemLayerRecord(TypedDict):
    """A system-wide or managed layer of the host, and how it was kept from the subject:
    `absent` (checked right before the subject started) or `hidden` (not visible to it)."""

    path: str
    kept: Literal["absent", "hidden"]


class HostBinaryRecord(TypedDict):
    """The host binary a run used, and what its configuration enforced where that is the
    host's to decide (Codex's sandbox)."""

    version: NotRequired[str]
    command: NotRequired[str]
    enforced: NotRequired[dict[str, str | bool]]
    # A Node host: the runtime it ran on ({kind: pinned|option, path, version}) and, for Pi and
    # Gemini CLI, the form that ran ({kind: stock}, or {kind: bundle|eager, sha256}).
    runtime: NotRequired[dict[str, str]]
    form: NotRequired[dict[str, str]]


class EnvironmentRecord(TypedDict):
    """The subject's environment: every variable name it had, the literal values the group
    declared and the names it inherited."""

    names: list[str]
    literal: dict[str, str]
    inherit: list[str]


class HostChoice(TypedDict):
    """The host a run ran on, who chose it and the host its group declared."""

    name: str
    chosenBy: NotRequired[Literal["definition", "invocation"]]
    declared: NotRequired[str]


class AttemptRecord(TypedDict):
    """An earlier attempt of a run (`--skill-eval-retries`): its number, how it ended and where
    its evidence lies, relative to the variant's directory (`attempts/<n>`)."""

    attempt: int
    state: str
    error: RecordedError
    evidence: str


class RunRecord(TypedDict):
    """`run.json` (or its fallback `run-error.json`), reference §5.3."""

    schema_version: NotRequired[int]
    variant: NotRequired[str]
    state: str
    evaluationType: NotRequired[str]
    # A random id made when the run's record is first written: what the noise floor and the
    # significance gate count the run once by, wherever a copy of it lies (a reused run keeps
    # its origin's). Results from before it fall back to their record's content digest.
    nonce: NotRequired[str]
    prompt: NotRequired[str | None]
    prompts: NotRequired[list[str]]
    turns: NotRequired[list[Turn]]
    successfulReadPaths: NotRequired[list[str]]
    # Declared tools whose calls this host cannot show, each with the reason.
    unobservableTools: NotRequired[dict[str, str]]
    activation: NotRequired[Activation]
    response: NotRequired[str | None]
    usage: NotRequired[RecordedUsage]
    # Requests the model endpoint received (loopback), else assistant replies observed (Pi
    # live); None where neither can be seen.
    modelCalls: NotRequired[int | None]
    spend: NotRequired[SpendRecord]
    effects: NotRequired[Effects | None]
    contextObservationArtifact: NotRequired[ContextArtifact | None]
    artifacts: NotRequired[RunArtifacts]
    error: NotRequired[RecordedError]
    # Present once a subject started (or its variant was prepared).
    startedAt: NotRequired[str]
    completedAt: NotRequired[str]
    workspace: NotRequired[str]
    resources: NotRequired[RunResources]
    tools: NotRequired[list[str]]
    commands: NotRequired[list[dict[str, object]]]  # each declared command, as declared
    model: NotRequired[ModelRecord]
    provider: NotRequired[ProviderRecord]
    # The host's binary (every host, under one key; results before it kept Pi's under `pi`).
    binary: NotRequired[HostBinaryRecord]
    pi: NotRequired[dict[str, object]]
    environment: NotRequired[EnvironmentRecord]
    process: NotRequired[Process]
    hint: NotRequired[str | None]
    delivery: NotRequired[Delivery | None]
    # Every system-wide or managed layer of the host (none for Pi) and how it was kept out.
    systemLayers: NotRequired[list[SystemLayerRecord]]
    # {"name", "chosenBy": "definition"|"invocation", "declared"}: off Pi, or chosen by
    # --skill-eval-host; absent on a Pi run of a group declared for Pi.
    host: NotRequired[HostChoice]
    # The inputs that determine the run, each hashed under its name (`run/inputs.py`).
    inputs: NotRequired[dict[str, str]]
    # `--skill-eval-reuse`: copied from an earlier sealed result (`result`, its seal `root`,
    # the source `run` record and its `sha256`), or why it was not (`notReused`).
    reused: NotRequired[dict[str, str]]
    notReused: NotRequired[str]
    # How many secrets were replaced, per file, when the run had any to replace.
    redactions: NotRequired[dict[str, dict[str, int]]]  # secret name → file → count
    # Only in the persistence fallback: the transcript that could not be written beside it.
    transcript: NotRequired[list[Any]]
    # --skill-eval-retries: each earlier (infrastructure-failed) attempt, in order, with its
    # state, error and evidence directory (`attempts/<n>`, relative to the variant's).
    attempts: NotRequired[list[AttemptRecord]]


# ---------------------------------------------------------------------------------------------
# deterministic-grade.json (or deterministic-grade-error.json)


class EvidenceRef(TypedDict):
    """Which run record a grade was computed from."""

    path: str | None
    sha256: str | None


class GradeErrorEntry(TypedDict):
    """One reason a grade is `grade-error`; `id` names the expectation, None the system."""

    id: str | None
    reason: str


class Check(TypedDict):
    """One check of a deterministic grade: pass, fail or unavailable, with what the expectation
    asked for and what the run showed (their shapes are the expectation kind's)."""

    id: str
    variant: NotRequired[str]
    kind: NotRequired[str]
    state: str
    expected: NotRequired[Any]
    observed: NotRequired[Any]


class Side(TypedDict):
    """One variant's outcome of a comparison: its check and that check's state."""

    check: NotRequired[str]
    state: str


class Comparison(TypedDict):
    """One comparison of a deterministic grade."""

    id: str
    kind: NotRequired[str]
    transition: str
    baseline: NotRequired[Side]
    candidate: NotRequired[Side]


class GradeRecord(TypedDict):
    """`deterministic-grade.json` (or `deterministic-grade-error.json`)."""

    schema_version: NotRequired[int]
    state: NotRequired[str]
    evidence: NotRequired[dict[str, EvidenceRef]]
    checks: NotRequired[list[Check]]
    comparisons: NotRequired[list[Comparison]]
    errors: NotRequired[list[GradeErrorEntry]]


# ---------------------------------------------------------------------------------------------
# group.json (or group-error.json) and summary.json


class GroupError(TypedDict):
    """A group-level problem: a record that could not be persisted, or a cancellation."""

    kind: NotRequired[str]
    message: NotRequired[str]
    artifact: NotRequired[str]


class GroupArtifacts(TypedDict):
    """File names of the group's grade and record (canonical or fallback)."""

    grade: NotRequired[str | None]
    group: NotRequired[str | None]


class GroupRecord(TypedDict):
    """`group.json` (or `group-error.json`); also each entry of `summary.json`'s groups."""

    id: SafeId
    position: NotRequired[int | None]
    state: str
    variants: NotRequired[dict[str, str]]
    grade: NotRequired[str | None]
    errors: NotRequired[list[GroupError]]
    # Absent from the placeholder of a group that never finished.
    trial: NotRequired[int]
    artifacts: NotRequired[GroupArtifacts]
    completedAt: NotRequired[str]
    # The host the group ran on, only when it is not Pi (its directory is `<id>@<host>`).
    host: NotRequired[SafeHost]


class Budget(TypedDict):
    """Spend against `--skill-eval-max-cost`."""

    maxCost: Number
    spent: Number
    exhausted: bool


class SummaryRecord(TypedDict):
    """`summary.json`: one result (trial), written once, last."""

    schema_version: NotRequired[int]
    id: NotRequired[str]
    trial: NotRequired[int]
    state: str
    groups: list[GroupRecord]
    completedAt: NotRequired[str]
    budget: NotRequired[Budget]


# ---------------------------------------------------------------------------------------------
# invocation.json


class InvocationGroup(TypedDict):
    """One group of a loaded definition, identified by content."""

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


class Selection(TypedDict):
    """What the invocation selected."""

    group: NotRequired[str | list[str] | None]  # one selector, or several in the order given
    variant: NotRequired[str | None]
    trial: NotRequired[int]
    trials: NotRequired[int]


class CannotRun(TypedDict):
    """A selected group one of the invocation's hosts cannot run, and why."""

    group: str
    host: str
    reason: str


class InvocationProvider(TypedDict):
    """Where the invocation's scripts or cassettes lie, and whether it records."""

    cassettes: NotRequired[str | None]
    record: NotRequired[str]


class FloorTrial(TypedDict):
    """A trial of a noise floor: its id and its seal root (`sha256:<root>`)."""

    id: str
    root: str


class FlakyGate(TypedDict):
    """The noise floor that decides for a run (None: none does), the checks it found flaky
    (which never gate), its trials, and the newer floors set aside with why."""

    noiseFloor: str | None
    checks: list[str]
    trials: list[FloorTrial]
    setAside: list[str]


class CarriedGroup(TypedDict):
    """A group a resumed result carried over, by directory name, with its manifest's sha256."""

    group: str
    manifest: str


class ResumedFrom(TypedDict):
    """The result a resumed one completes: its id, where it lies, its seal root (None: never
    sealed), and each group carried over from it."""

    id: str
    path: str
    root: str | None
    groups: list[CarriedGroup]


class InvocationRecord(TypedDict):
    """`invocation.json`: what a result was run from, written before any group starts."""

    schema_version: NotRequired[int]
    id: NotRequired[str]
    root: NotRequired[str]
    definitions: NotRequired[list[InvocationDefinition]]
    selection: NotRequired[Selection]
    pins: NotRequired[Any]
    provider: NotRequired[InvocationProvider]
    failOn: NotRequired[str]
    alpha: NotRequired[float]  # the significance gate's, under failOn significant-regression
    startedAt: NotRequired[str]
    # A random id every trial of one invocation shares: which results are one run's trials,
    # whatever their ids (a noise floor decides only as the trials of one invocation).
    nonce: NotRequired[str]
    # The hosts --skill-eval-host chose over each group's runtime.host, when it was given.
    hosts: NotRequired[list[str]]
    # The selected groups a chosen host cannot run: their items are skips, not runs. A reader
    # keeps the well-formed entries (`read.cannot_run_facts`).
    cannotRun: NotRequired[list[CannotRun] | Any]
    identicalArms: NotRequired[bool]  # a noise-floor trial: the baseline arm is the candidate's
    flakyGate: NotRequired[FlakyGate]
    resumedFrom: NotRequired[ResumedFrom]  # --skill-eval-resume


# ---------------------------------------------------------------------------------------------
# definition.json, manifest.json, seal.json (shard.json and plan.json: `scale/models.py`)


class VariantDeclaration(TypedDict):
    """One variant of a group definition, as trigger rates read it."""

    skills: NotRequired[list[Any] | None]
    target: NotRequired[int | None]


class DefinitionRecord(TypedDict):
    """`definition.json`: the group as declared, as the views, reviews and rates read it (the
    whole declaration is described where it is loaded, `definitions/`)."""

    type: NotRequired[str | None]
    input: NotRequired[dict[str, object] | None]
    variants: NotRequired[dict[str, VariantDeclaration] | None]
    expectations: NotRequired[list[Any] | None]
    review_questions: NotRequired[list[Any] | None]


class ManifestRecord(TypedDict):
    """A group's `manifest.json`."""

    schema_version: NotRequired[int]
    files: dict[str, str]
    directories: NotRequired[list[str]]  # format 2: every directory below the group
    path_b64: NotRequired[dict[str, str]]


class SealLeaf(TypedDict):
    """One leaf of the seal."""

    name: str
    sha256: str | None
    groups: NotRequired[list[str]]


class SealRecord(TypedDict):
    """`seal.json`."""

    schema_version: NotRequired[int]
    algorithm: NotRequired[str]
    leaves: list[SealLeaf]
    root: str
    # A merged result: the shard roots it joined, checked where they are read (`seal.py`).
    shards: NotRequired[Any]
