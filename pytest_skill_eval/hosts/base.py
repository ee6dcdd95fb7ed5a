"""The subject seam: what every host (coding-agent CLI) must do, and the launch they share.

A host prepares an isolated home for one run, turns a host-neutral `Launch` into its argv and
environment, converses with its process turn by turn while translating its event stream into
the neutral `Observation`, and cleans up. Everything else (evidence, watchdog, cancellation,
the run record) is the same for every host and lives in `hosts.subject`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..evidence.redact import Redactor
from ..modelserver.server import Route
from .compile_cache import subject_cache, warm_cache
from .environment import OwnedEnvironment, subject_environment
from .layers import SystemLayer
from .observation import Observation, Turn
from .prestart import PromptGate
from .process import NO_PROGRESS_S, CancelToken, HostProcess, ProcessOutcome


class Executable(Protocol):
    """A checked host binary: where it is and which version answered."""

    @property
    def path(self) -> Path: ...

    @property
    def version(self) -> str: ...


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
    live_models: dict[str, Any] | None = None
    auth_json: bytes | None = None
    cassette: str | None = None
    cassette_sha256: str | None = None
    failures: Callable[[], list[dict[str, Any]]] = list
    # What the model endpoint received, one `{index, api, path, sha256, body}` per request;
    # None when the traffic is not ours to see (live mode).
    requests: Callable[[], list[dict[str, Any]]] | None = None
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


class Host(Protocol):
    """A coding-agent CLI the evaluator can run as a subject (selected by `runtime.host`).

    A host may set `defers_first_prompt = True`: its multi-turn dialogue then holds the first
    prompt until `Launch.gate` opens, so its candidate can be pre-started (`run.prestart`).
    """

    name: str  # the `runtime.host` value
    display_name: str  # how messages name it
    record_key: str  # the run record's key for the binary's version and command
    auth_advice: str  # how an operator gets credentials to a live run of this host
    # A Node program: started as `<node> <entry>` on the pinned runtime (`hosts.runtime`) when its
    # binary says so, with a private copy of the evaluator's warm compile cache.
    runs_on_node: bool
    # Records what the model received from inside (Pi's observer extension); else `context-text`
    # is taken from the requests the loopback server saw.
    observes_context: bool
    # What it reads from outside its isolated home (managed settings, /etc): none may exist.
    system_layers: tuple[SystemLayer, ...]
    # The variables of its isolation (`hosts.environment`): no definition may set them.
    owned_environment: OwnedEnvironment

    def prepare(self, root: Path, endpoint: Endpoint) -> Home:
        """Create the isolated home under `root` and write the host's config for `endpoint`."""
        ...

    def environment(self, home: Home) -> dict[str, str]:
        """The isolated baseline environment: nothing from the operator that carries identity."""
        ...

    def argv(self, binary: Executable, launch: Launch, home: Home) -> list[str]:
        """The host's command line for `launch`."""
        ...

    def converse(
        self,
        process: HostProcess,
        cancel: CancelToken,
        launch: Launch,
        after_turn: Callable[[Turn], None],
    ) -> Dialogue:
        """A conversation that turns the host's event stream into the neutral observation."""
        ...

    def cleanup(self, home: Home) -> None:
        """Release what the host left outside its home (the home itself is deleted after)."""
        ...


# Memory-backed, and with this much room at least, or isolated homes go to the temp directory.
_SHM = "/dev/shm"
_SHM_ROOM = 1 << 30


def home_parent() -> str | None:
    """Where isolated homes are made: the operator's TMPDIR when set, else /dev/shm when it has
    room, else the system's temp directory (None: `tempfile`'s choice).

    A home is thrown away after its run, so nothing is gained from a disk, and on one the host's
    own databases pay for their syncs (Codex writes seven SQLite files per run: 36 ms of a
    350 ms scripted turn here) and the deletion pays for the filesystem's discards (7 ms)."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        room = os.statvfs(_SHM)
    except OSError:
        return None
    if room.f_bavail * room.f_frsize < _SHM_ROOM or not os.access(_SHM, os.W_OK | os.X_OK):
        return None
    return _SHM


@contextlib.contextmanager
def isolated_home(host: Host, endpoint: Endpoint, *, prefix: str) -> Iterator[Home]:
    """A fresh home for one run, always deleted afterwards: it never becomes evidence."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=home_parent()))
    home: Home | None = None
    try:
        home = host.prepare(root, endpoint)
        yield home
    finally:
        if home is not None:
            host.cleanup(home)
        shutil.rmtree(root, ignore_errors=True)


def launch_process(
    host: Host, binary: Executable, launch: Launch, home: Home
) -> tuple[list[str], dict[str, str], HostProcess]:
    """The argv, environment and (not yet started) process of `launch` in `home`."""
    argv = host.argv(binary, launch, home)
    env = host.environment(home)
    runtime = getattr(binary, "runtime", None)
    if host.runs_on_node and runtime is not None and len(argv) > 1 and argv[0] == str(runtime.path):
        warm = warm_cache(f"{host.name}-{binary.version}", runtime, argv[:2])
        env |= subject_cache(warm, home.root)
    env["PWD"] = str(launch.cwd)
    env = subject_environment(host.owned_environment, env, launch.environment)
    process = HostProcess(
        argv=argv,
        env=env,
        cwd=launch.cwd,
        events_path=launch.events_path,
        stderr_path=launch.stderr_path,
        interactive=not launch.one_shot,
        no_progress_s=launch.no_progress_s,
        redactor=launch.redactor,
        home=home.root,
    )
    return argv, env, process


def host_record(host: Host, binary: Executable) -> dict[str, Any]:
    """The run record's entry for the host: its binary and, for a host whose configuration
    decides what is enforced (Codex's sandbox), what it enforced."""
    record: dict[str, Any] = {"version": binary.version, "command": str(binary.path)}
    started = getattr(binary, "record", None)
    if callable(started):  # a Node host: the runtime it ran on and the form that ran
        record |= started()
    enforced = getattr(host, "enforced", None)
    if isinstance(enforced, dict):
        record["enforced"] = enforced
    return record


# Modes whose cost is priced like a real model but never paid: shown as simulated.
SIMULATED_MODES = ("scripted", "replay")


def spend_record(endpoint: Endpoint, usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the run cost in USD, and whether that money was spent or only simulated.

    A recording route prices what went upstream (replayed parts of a cassette are free); a
    live run costs what the host priced from the provider's usage; scripted and replayed
    runs report the host's priced usage as `simulated`, and the ledger never charges them.
    """
    cost = (usage or {}).get("cost")
    reported = cost.get("total") if isinstance(cost, Mapping) else None
    usd = float(reported) if isinstance(reported, int | float) else 0.0
    if endpoint.spend is not None:
        usd = endpoint.spend()
    return {"usd": round(usd, 10), "simulated": endpoint.mode in SIMULATED_MODES}
