"""The one description of `aggregate.json`: counts and statistics over trials (reference §6.5).

As in `records.py`, the writer (`analysis/`) is checked against it by mypy and the reader's
strict validator is built from it (`shapes.py`); a field an older aggregate can lack is
`NotRequired`, unknown fields are allowed.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from pydantic import AfterValidator

# pydantic reads TypedDicts from typing_extensions only, before Python 3.12.
from typing_extensions import TypedDict

from .constraints import Count, Holds, Interval, Number, SafeHost, SafeId
from .records import Budget
from .skill_records import OfferedState


class TrialRow(TypedDict):
    """One trial of an aggregate."""

    id: SafeId
    state: str


class Fingerprint(TypedDict):
    """The inputs of a trial, compared across trials."""

    definitions: Any
    pins: Any


class AggregateInputs(TypedDict):
    """Whether every trial ran from the same inputs."""

    identical: bool
    # The first trial's; a reader tolerates any objects here (older aggregates).
    fingerprints: NotRequired[Annotated[list[Fingerprint], Holds(list[dict[str, object]])]]


class Rate(TypedDict):
    """A pass rate and its interval."""

    passRate: NotRequired[Number | None]
    interval: NotRequired[Interval | None]


class Consistency(TypedDict):
    """pass@k and pass^k of one check for k trials drawn from the n observed."""

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


class Unpaired(TypedDict):
    """A comparison whose arms were compared as independent samples, because one was reused
    from another invocation: the test, its p-value, the reused arms and why."""

    test: NotRequired[str]
    p: NotRequired[Number]
    reused: NotRequired[list[str]]
    why: NotRequired[str]


class Sequential(TypedDict):
    """`--skill-eval-trials auto`: a comparison's sequential decision (its E-value against the
    threshold) and why it stopped where it did."""

    resolvedAtTrial: NotRequired[int | None]
    eValue: NotRequired[Number]
    threshold: NotRequired[Number]
    stop: NotRequired[str]


class GroupAdaptive(TypedDict):
    """`--skill-eval-trials auto`: the trials a group used and why it stopped (resolved,
    futility, max-trials, budget-exhausted, incomplete, no-comparisons)."""

    trialsUsed: NotRequired[int]
    stop: NotRequired[str]


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
    unpaired: NotRequired[Unpaired]
    sequential: NotRequired[Sequential]


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


class TargetOffered(TypedDict):
    """How the host offered a description variant's target over the trials: how many trials
    saw it in each state of `offered-skills.json` (`absent`: not offered)."""

    variant: str
    target: str  # the target's name
    trials: dict[OfferedState, Count]


class AggregateGroup(TypedDict):
    """Counts and statistics of one group over the trials."""

    id: SafeId
    trials: int
    comparisons: list[AggregateComparison]
    checks: list[AggregateCheck]
    # Only off Pi: the host these trials ran on.
    host: NotRequired[SafeHost]
    adaptive: NotRequired[GroupAdaptive]
    # Per-arm usage facts; absent when no subject of the group started.
    usage: NotRequired[ArmUsage]
    # --skill-eval-retries: attempts beyond each run's first, over every trial (absent: none).
    retries: NotRequired[int]
    # Per description variant with a target, how it was offered (absent: no such variant).
    offered: NotRequired[list[TargetOffered]]


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


class TriggerCountsFields(TypedDict):
    """How often the target was read among runs that observed it, and who was left out."""

    read: NotRequired[Count | None]
    observed: NotRequired[Count | None]
    rate: NotRequired[Number | None]
    interval: NotRequired[Interval | None]
    # Runs that ended invalid, infrastructure-failed or cancelled, by state: never "not read".
    excluded: NotRequired[dict[str, Count] | None]
    # Complete runs whose read could not be observed (an unavailable check).
    unobserved: NotRequired[Count | None]


def _read_among_observed(counts: TriggerCountsFields) -> TriggerCountsFields:
    if (counts.get("read") or 0) > (counts.get("observed") or 0):
        raise ValueError("more runs read the target than observed it")
    return counts


TriggerCounts = Annotated[TriggerCountsFields, AfterValidator(_read_among_observed)]


class TriggerVariant(TypedDict):
    """One variant's targets (None: no target) and its two rates."""

    targets: NotRequired[list[TriggerSkill | None] | list[Any]]
    # The runs counted, per state in which the host offered the target (absent: none recorded).
    offered: NotRequired[dict[OfferedState, Count]]
    activation: NotRequired[TriggerCounts]
    falseActivation: NotRequired[TriggerCounts]


class TriggerDifference(TypedDict):
    """Candidate rate minus baseline rate, with Newcombe's hybrid score 95% interval."""

    difference: Number
    interval: Interval


class TriggerRate(TypedDict):
    """Activation and false activation rates of one target skill over a suite and its trials."""

    skill: NotRequired[Annotated[TriggerSkill, Holds(TriggerSkill | dict[str, object])]]
    groups: NotRequired[list[str]]
    variants: NotRequired[dict[str, TriggerVariant]]
    difference: NotRequired[dict[str, TriggerDifference | None]]


class CannotRunTrials(TypedDict):
    """A group a chosen host cannot run, why, and how many trials said so."""

    group: str
    host: str
    reason: str
    trials: int


class CrossHostRow(TypedDict):
    """A check's counts or a comparison's transitions on each host (None: not graded there),
    and whether they are the same on every host."""

    kind: str
    id: str
    hosts: dict[str, dict[str, int | None] | None]
    held: bool


class CrossHostTable(TypedDict):
    """A group run on several hosts: its rows, whether all held, and each host that cannot
    run it with the reason."""

    id: str
    hosts: list[str]
    held: bool
    rows: list[CrossHostRow]
    cannotRun: NotRequired[dict[str, str]]


class FloorCheck(TypedDict):
    """A comparison's candidate check on identical arms: how often its arms disagreed over the
    trials that observed both, the rate with its interval, and whether that makes it flaky."""

    group: str
    comparison: str
    baseline: str
    disagreements: int
    trials: int
    rate: NotRequired[Number | None]
    interval: NotRequired[Interval | None]
    flaky: NotRequired[bool]


class NoiseFloor(TypedDict):
    """A noise-floor run's measure: its trials, each check's disagreement, the flaky bound."""

    trials: int
    perCheck: dict[str, FloorCheck]
    bound: Number


class AggregateRecord(TypedDict):
    """`aggregate.json`: counts and statistics over trials (reference §6.5)."""

    schema_version: NotRequired[int]
    kind: NotRequired[str]
    id: NotRequired[str]
    state: NotRequired[str]
    requestedTrials: NotRequired[int]
    trials: NotRequired[list[TrialRow]]
    inputs: NotRequired[AggregateInputs]
    groups: NotRequired[list[AggregateGroup]]
    completedAt: NotRequired[str]
    budget: NotRequired[Budget]
    adaptive: NotRequired[Annotated[AdaptiveRun, Holds(AdaptiveRun | dict[str, object])]]
    noiseFloor: NotRequired[NoiseFloor]  # `--skill-eval-noise-floor` (`noise_floor.py`)
    # Groups run on several hosts: per check/comparison the counts on each host, and whether
    # they held on every host.
    crossHost: NotRequired[list[CrossHostTable]]
    # The groups a chosen host cannot run, with the trials that said so: counted apart.
    cannotRun: NotRequired[list[CannotRunTrials]]
    # Absent from aggregates written before trigger rates were recorded.
    triggerRates: NotRequired[list[TriggerRate]]
