"""The subject seam: what every host (coding-agent CLI) must do, and the launch they share
(with its `PromptGate`, which holds a pre-started host's first prompt).

A host prepares an isolated home for one run, turns a host-neutral `Launch` into its argv and
environment, converses with its process turn by turn while translating its event stream into
the neutral `Observation`, and cleans up. Everything else (evidence, watchdog, cancellation,
the run record) is the same for every host and lives in `hosts.subject`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..evidence.observed import EndpointFailure, ModelRequest, ProcessTiming
from ..evidence.redact import Redactor
from ..evidence.store import utc_now
from ..modelserver.route import Route
from .environment import OwnedEnvironment
from .layers import SystemLayer
from .observation import Observation, Turn
from .process import NO_PROGRESS_S, CancelToken, HostProcess, ProcessOutcome
from .reaper import Guardian
from .workspace_layers import WorkspaceLayer

HELD, OPEN, ABORTED = "held", "open", "aborted"


class PromptGate:
    """Holds a host's first prompt until its run may begin; records the run's timing."""

    def __init__(self, *, held: bool = False) -> None:
        self._lock = threading.Lock()
        self._decided = threading.Event()
        self._state = HELD if held else OPEN
        self._on_open: list[tuple[Callable[..., object], tuple[Any, ...]]] = []
        self.waiting = False  # the host is started and configured, waiting at the gate
        # The first prompt goes over stdin after the spawn, not in argv: never sent, never dated.
        self.deferred = False
        self.opened_at: str | None = None  # when a held gate opened (None: never held)
        self.spawned_at: str | None = None
        self.prompted_at: str | None = None
        if not held:
            self._decided.set()

    @property
    def held(self) -> bool:
        """Whether the run may not begin yet (neither opened nor aborted)."""
        return self._state == HELD

    @property
    def aborted(self) -> bool:
        """Whether the run was called off before its first prompt."""
        return self._state == ABORTED

    def open(self) -> bool:
        """Let the run begin (False: it was aborted first); runs the `when_open` callbacks."""
        with self._lock:
            if self._state != HELD:
                return self._state == OPEN
            self._state = OPEN
            self.opened_at = utc_now()
            callbacks, self._on_open = self._on_open, []
        for callback, args in callbacks:
            callback(*args)
        self._decided.set()
        return True

    def abort(self) -> bool:
        """Call the run off before its first prompt (False: it had already begun)."""
        with self._lock:
            if self._state == HELD:
                self._state = ABORTED
        self._decided.set()
        return self._state == ABORTED

    def when_open(self, callback: Callable[..., object], *args: Any) -> None:
        """Call `callback(*args)` once the run may begin: now when open, else on opening."""
        with self._lock:
            if self._state == HELD:
                self._on_open.append((callback, args))
                return
            if self._state == ABORTED:
                return
        callback(*args)

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the gate to open or abort; whether it was decided."""
        return self._decided.wait(timeout)

    def spawned(self) -> None:
        """The host process was just spawned."""
        self.spawned_at = utc_now()

    def prompting(self) -> None:
        """The first prompt is going to the host now (later prompts change nothing)."""
        if self.prompted_at is None:
            self.prompted_at = utc_now()

    def ready(self, received: Callable[[], int] | None) -> Callable[[], int] | None:
        """What frees a start-up slot: the model reached, or (held) the host at the gate."""
        if received is None:
            return None
        count = received
        return lambda: count() + (1 if self.waiting else 0)

    def timing(self) -> ProcessTiming:
        """The run record's `process` timing: a prompt in argv goes out at the spawn; one sent
        later (`deferred`) has no time when the run ended before it went out."""
        prompted = self.prompted_at if self.deferred else self.prompted_at or self.spawned_at
        return {"spawnedAt": self.spawned_at, "promptedAt": prompted}


class Executable(Protocol):
    """A checked host binary: where it is and which version answered."""

    @property
    def path(self) -> Path: ...

    @property
    def version(self) -> str: ...


@runtime_checkable
class ConfinableReads(Protocol):
    """A checked host binary whose subjects' reads may run unconfined (Codex without bwrap, as
    the operator may choose): a pre-start asks it (`run.prestart.applies`). Such a binary
    subclasses this, so mypy holds it to the property; every other host's reads stay inside the
    variant's roots by its guard."""

    __slots__ = ()

    @property
    def reads_confined(self) -> bool: ...


@dataclass(frozen=True)
class ServedModel:
    """The loopback route that serves a run's model, as a host must be told about it."""

    route: Route
    api: str
    provider: str
    model_id: str
    # USD per million tokens, so usage is priced as it would be live; None prices it at zero.
    cost: Mapping[str, float] | None = None


@dataclass
class Endpoint:
    """Where a subject's model traffic goes, and what the evidence keeps about it."""

    mode: str  # scripted | replay | record | live
    model: dict[str, str] | None  # {"model": "provider/id", "thinking"?: level}
    served: ServedModel | None = None  # None: the host talks to the live provider itself
    # Live runs only, in the host's own format: the operator's provider table and credentials.
    live_models: dict[str, object] | None = None
    auth_json: bytes | None = None
    cassette: str | None = None
    cassette_sha256: str | None = None
    failures: Callable[[], list[EndpointFailure]] = list
    # What the model endpoint received, one `{index, api, path, sha256, body}` per request;
    # None when the traffic is not ours to see (live mode).
    requests: Callable[[], list[ModelRequest]] | None = None
    # How many requests the endpoint has received so far (cheap; polled while a host starts);
    # None when the traffic is not ours to see.
    received: Callable[[], int] | None = None
    # USD the provider charged for this run's upstream requests, when the route saw them;
    # None: the host's own reported cost is what was spent.
    spend: Callable[[], float] | None = None
    close: Callable[[], None] = lambda: None
    # Credentials the endpoint itself uses (an upstream key while recording), by name.
    secrets: Mapping[str, str] = field(default_factory=dict)
    # Hands the run's redactor to whatever the endpoint writes (a cassette being recorded).
    redact_with: Callable[[Redactor], None] = lambda redactor: None


@dataclass(frozen=True)
class Home:
    """The isolated, deleted-afterwards directories of one run (they may hold credentials)."""

    root: Path
    home: Path  # HOME
    tmp: Path  # TMPDIR
    config: Path  # the host's own state/config directory (Pi's agent dir)
    # Started with the home (`launch.isolated_home`): deletes it should the evaluator die.
    guardian: Guardian | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Launch:
    """What to run, said without naming a host."""

    cwd: Path
    prompts: tuple[str, ...]
    one_shot: bool  # the prompt goes in argv and the host exits after one turn
    events_path: Path
    stderr_path: Path
    model: Mapping[str, str] | None = None
    tools: tuple[str, ...] = ()
    skills: tuple[Path, ...] = ()
    session_dir: Path | None = None
    # The evaluator's own add-ons: tool and path guard, declared-commands tool, context observer.
    guard: bool = False
    command_tool: bool = False
    observe_context: bool = False
    plugins: tuple[Path, ...] = ()  # the variant's add-ons in the host's own format
    target: Path | None = None  # the skill delivered explicitly on turn one
    turn_file: Path | None = None  # gets the current turn number, for the add-ons
    # Added to the host's isolated baseline; never over a name the host owns.
    environment: Mapping[str, str] = field(default_factory=dict)
    no_progress_s: float = NO_PROGRESS_S
    # Every secret of the run: stdout and stderr are redacted before they reach the disk.
    redactor: Redactor = field(default_factory=Redactor)
    # Held for a pre-started host (its first prompt waits); records the run's timing.
    gate: PromptGate = field(default_factory=PromptGate)
    # The host's workspace layers as they were before its first process started
    # (`workspace_layers.layer_state`); None: not taken, so none is checked.
    layers_at_start: Mapping[str, str | None] | None = None


@dataclass(frozen=True)
class Command:
    """How a host is started for one launch: its command line and its isolated environment."""

    argv: list[str]
    # The isolated baseline: nothing from the operator that carries identity.
    env: dict[str, str]


@dataclass(frozen=True)
class Talk:
    """What a conversation runs over: the host's first process, the run's cancellation, the
    launch, and who is told of each finished turn."""

    process: HostProcess
    cancel: CancelToken
    launch: Launch
    after_turn: Callable[[Turn], None]


class Dialogue(Protocol):
    """One conversation with a started host process.

    A host that keeps one process for the whole run (Pi's rpc mode, a stream-json input) talks
    to the process it was given; one that needs a process per turn (a `resume` command line)
    starts the later ones itself with the same environment, and `process` is the current one.
    """

    @property
    def process(self) -> HostProcess:
        """The process currently running: the one to stop when the conversation fails."""
        ...

    @property
    def observation(self) -> Observation:
        """Everything observed so far (kept when the conversation fails)."""
        ...

    @property
    def outcome(self) -> ProcessOutcome:
        """How the process is ending, filled in as the conversation goes."""
        ...

    def run(self) -> tuple[Observation, ProcessOutcome]:
        """Deliver every prompt, read the host's events until it is done, reap it."""
        ...


class Declared(Protocol):
    """What the seam and a run read of a host's declaration (its `HostRegistration` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def display_name(self) -> str: ...

    @property
    def system_layers(self) -> tuple[SystemLayer, ...]: ...

    @property
    def workspace_layers(self) -> tuple[WorkspaceLayer, ...]: ...

    @property
    def owned_environment(self) -> OwnedEnvironment: ...

    @property
    def runs_on_node(self) -> bool: ...

    @property
    def prompt_on_stdin(self) -> bool: ...

    @property
    def converses_on_stdin(self) -> bool: ...

    @property
    def observes_context(self) -> bool: ...

    @property
    def unobservable(self) -> Mapping[str, str]: ...

    @property
    def offered(self) -> str: ...


class Host(Protocol):
    """A coding-agent CLI the evaluator can run as a subject (selected by `runtime.host`).

    One run calls `prepare`, then `command`, then `converse`, then `cleanup`, each once; what
    one returns is all the next needs (argv and environment come from one call, so neither
    depends on the other having run). Everything known before the implementation is imported
    is its `registration` (`hosts.registration`).

    A host whose registration says `defers_first_prompt` holds the first prompt of its
    dialogue until `Launch.gate` opens (a multi-turn one, unless it reads the prompt on stdin:
    `prompt_on_stdin`), so its candidate can be pre-started.
    """

    # Its name, isolation, the facts it cannot observe: read from the registry (not the class)
    # at each call, so what a test registers is what runs.
    @property
    def registration(self) -> Declared: ...

    def prepare(self, root: Path, endpoint: Endpoint) -> Home:
        """Create the isolated home under `root` and write the host's config for `endpoint`."""
        ...

    def command(self, binary: Executable, launch: Launch, home: Home) -> Command:
        """The host's command line and isolated environment for `launch` in `home`."""
        ...

    def converse(self, talk: Talk) -> Dialogue:
        """A conversation that turns the host's event stream into the neutral observation."""
        ...

    def cleanup(self, home: Home) -> None:
        """Release what the host left outside its home (the home itself is deleted after)."""
        ...
