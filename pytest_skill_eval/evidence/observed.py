"""What `run.json` records of a subject as it was observed: its turns and their tool calls,
workspace changes and usage, the model that answered, how the target skill was delivered, what
the run cost, and what went wrong in the host's output.

Part of the one description of `run.json` (`records.py` holds the record itself); the same
rules hold: `NotRequired` where an older result can lack a field, unknown fields allowed.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

# pydantic reads TypedDicts from typing_extensions only, before Python 3.12.
from typing_extensions import TypedDict

from .constraints import Holds


class ToolCall(TypedDict):
    """One tool call of a turn: the host's id and the neutral tool name, the arguments as the
    host sent them (the neutral `path` or `name` beside the host's own), and how it ended."""

    toolCallId: NotRequired[str | None]
    toolName: NotRequired[str | None]
    args: NotRequired[object]
    completed: NotRequired[bool]
    isError: NotRequired[bool | None]
    # A declared command's exit code, read from the result the host reported (null: a signal or
    # the timeout ended it; absent: no status line, or not a command).
    exitCode: NotRequired[int | None]


class UsageCost(TypedDict):
    """What a turn's or run's tokens cost in USD, by kind and in total (a host that reports only
    its total gives only `total`)."""

    input: NotRequired[float]
    output: NotRequired[float]
    cacheRead: NotRequired[float]
    cacheWrite: NotRequired[float]
    total: NotRequired[float]


class Usage(TypedDict):
    """Tokens a turn or run used, by kind, and what they cost (a reader meets older shapes too:
    it checks what it uses, `analysis/usage.py`)."""

    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    cost: UsageCost


class ObservedModel(TypedDict):
    """The provider and model that answered, as the host reported them."""

    provider: str | None
    model: str | None


class Delivery(TypedDict):
    """How a body run's target skill reached the subject on its first turn: named explicitly
    (a skill command or mention, with what confirmed it), by a natural prompt, or `unavailable`
    (the host cannot hand it over, with the reason where one is known)."""

    kind: str
    turn: int
    targetPath: str | None
    command: NotRequired[str | None]
    mention: NotRequired[str]
    confirmedBy: NotRequired[str]
    reason: NotRequired[str]


class SpendRecord(TypedDict):
    """What a run cost in USD, and whether that money was spent or only simulated."""

    usd: float
    simulated: bool


class ParseError(TypedDict):
    """An output record of the host that could not be read: its line (None: the stream's end)."""

    line: int | None
    reason: str | None


class ChangeSet(TypedDict):
    """Paths created, modified and deleted; a path that is not UTF-8 is written escaped, with
    its exact bytes under `path_b64`."""

    created: NotRequired[list[Any] | None]
    modified: NotRequired[list[Any] | None]
    deleted: NotRequired[list[Any] | None]
    path_b64: NotRequired[dict[str, str]]


class TurnWorkspace(TypedDict):
    """The workspace after a turn: where its snapshot lies, its files, and what changed since
    the run began and since the turn before."""

    path: NotRequired[str]
    files: NotRequired[list[dict[str, str]]]
    changes: NotRequired[ChangeSet]
    changesSincePrevious: NotRequired[ChangeSet | None]


class TranscriptSpan(TypedDict):
    """Where a turn's messages lie in the run's transcript: `file`, from `start` to `end`."""

    file: str
    start: int
    end: int


# A reader meets older and hand-made usage too: it checks the parts it uses (`analysis/usage.py`).
RecordedUsage = Annotated[Usage | None, Holds(dict[str, object] | None)]


class Turn(TypedDict):
    """One turn of a run: the prompt as declared and as delivered, the reply, where its
    messages lie in the transcript, what it read and called, its usage and how it ended."""

    turn: NotRequired[int]
    prompt: NotRequired[str]
    deliveredPrompt: NotRequired[str]
    response: NotRequired[str]
    transcript: NotRequired[TranscriptSpan]
    successfulReadPaths: NotRequired[list[str]]
    targetRead: NotRequired[bool]
    toolActivity: NotRequired[list[ToolCall] | None]
    promptAccepted: NotRequired[bool]
    usage: NotRequired[RecordedUsage]
    assistantError: NotRequired[str | None]
    settled: NotRequired[bool]
    wallTimeMs: NotRequired[int | None]
    workspace: NotRequired[TurnWorkspace | None]


class Effects(TypedDict):
    """A body run's workspace before and after the run, and what changed between them."""

    before: NotRequired[list[dict[str, str]]]
    after: NotRequired[list[dict[str, str]]]
    changes: NotRequired[ChangeSet | None]


class ContextArtifact(TypedDict):
    """The context observations of a run (what the model received): their file, its digest
    and size, how many records it holds and the surfaces they came from."""

    path: str
    sha256: str
    bytes: int
    count: int
    surfaces: list[str]


class ModelRecord(TypedDict):
    """The model the group declared (as declared) and the one the host said answered."""

    declared: NotRequired[dict[str, object] | None]
    observed: NotRequired[ObservedModel | None]


class ProviderRecord(TypedDict):
    """Where the subject's model calls went: the endpoint's mode and the cassette it used."""

    mode: str
    cassette: NotRequired[str | None]
    sha256: NotRequired[str | None]


class ModelRequest(TypedDict):
    """One request the loopback model endpoint received, in arrival order: a line of
    `model-requests.jsonl`."""

    index: int
    api: str | None
    path: str
    sha256: str
    body: dict[str, object]


class EndpointFailure(TypedDict):
    """A failure of the loopback model endpoint, recorded as the run's protocol error: its
    reason, message and the script interaction it concerns (None: none)."""

    reason: str
    message: str
    interaction: int | None


class ProcessTiming(TypedDict):
    """When the host's process was spawned and its first prompt went out."""

    spawnedAt: NotRequired[str | None]
    promptedAt: NotRequired[str | None]


class Process(ProcessTiming):
    """How the host's process ran and ended."""

    command: NotRequired[str]
    host: NotRequired[str]
    args: NotRequired[list[str]]
    exitCode: NotRequired[int | None]
    signal: NotRequired[str | None]
    settled: NotRequired[bool]
    assistantError: NotRequired[str | None]
    terminationReason: NotRequired[str | None]
    parseErrors: NotRequired[list[ParseError] | None]
    # Each with its `reason` and the details of the failure (open: they are the host's).
    protocolErrors: NotRequired[list[dict[str, object]] | None]
    descendantsKilled: NotRequired[int]
    stderr: NotRequired[str | None]
    startupWaitMs: NotRequired[int]
