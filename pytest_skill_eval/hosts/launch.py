"""Launching a host for one run: where its isolated home is made, the process of a launch with
its environment, and the run record's entries for the binary and the spend. The same for every
host; what differs is behind the seam (`hosts.base.Host`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..evidence.observed import SpendRecord, Usage, UsageCost
from ..evidence.records import HostBinaryRecord
from ..evidence.states import SIMULATED_MODES
from .base import Endpoint, Executable, Home, Host, Launch
from .compile_cache import subject_cache, warm_cache
from .environment import subject_environment
from .observation import USAGE_FIELDS
from .process import HostProcess
from .reaper import Guardian
from .runtime import node_prefix

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
def isolated_home(
    host: Host, endpoint: Endpoint, *, prefix: str, workspace: Path | None = None
) -> Iterator[Home]:
    """A fresh home for one run, always deleted afterwards: it never becomes evidence.

    Its guardian (`reaper`) is started before anything is written there and watches every
    process of the run in `workspace` (the home itself when None): should the evaluator die at
    any moment from then on (a pre-started subject waiting for its start-up slot, a host
    between two turns' processes), the home, which may hold credentials, is deleted."""
    root, guardian = _guarded_directory(prefix, workspace)
    home: Home | None = None
    try:
        home = dataclasses.replace(host.prepare(root, endpoint), guardian=guardian)
        yield home
    finally:
        guardian.sweep()  # nothing of the run may still write there while it is deleted
        if home is not None:
            host.cleanup(home)
        shutil.rmtree(root, ignore_errors=True)
        guardian.release()


# The characters and length of `tempfile.mkdtemp`'s names, which recorded cassettes' home paths
# are recognised by (`modelserver.placeholders`).
_NAME_CHARACTERS, _NAME_LENGTH = "abcdefghijklmnopqrstuvwxyz0123456789_", 8


def _random_name() -> str:
    return "".join(secrets.choice(_NAME_CHARACTERS) for _ in range(_NAME_LENGTH))


def _guarded_directory(prefix: str, workspace: Path | None) -> tuple[Path, Guardian]:
    """A new private directory (as `tempfile.mkdtemp` makes one) whose guardian was started
    before it was made: no moment exists in which a killed evaluator leaves it behind."""
    parent = Path(home_parent() or tempfile.gettempdir())
    while True:
        root = parent / f"{prefix}{_random_name()}"
        guardian = Guardian.start(workspace or root, root)
        try:
            root.mkdir(mode=0o700)
        except FileExistsError:
            guardian.dismiss()  # another's: left alone
            continue
        except BaseException:  # an interrupt may come just after the directory was made
            with contextlib.suppress(OSError):
                root.rmdir()
            guardian.dismiss()
            raise
        return root, guardian


def launch_process(
    host: Host, binary: Executable, launch: Launch, home: Home
) -> tuple[list[str], dict[str, str], HostProcess]:
    """The argv, environment and (not yet started) process of `launch` in `home`."""
    command = host.command(binary, launch, home)
    argv, env = command.argv, dict(command.env)
    registration = host.registration
    runtime = getattr(binary, "runtime", None)
    if (
        registration.runs_on_node
        and runtime is not None
        and argv[:1] == [str(runtime.path)]
        and len(argv) > 1
    ):
        # A Node program on the pinned runtime: a private copy of the evaluator's warm cache.
        warm = warm_cache(f"{registration.name}-{binary.version}", runtime, node_prefix(argv))
        env |= subject_cache(warm, home.root)
    env["PWD"] = str(launch.cwd)
    env = subject_environment(registration.owned_environment, env, launch.environment)
    process = HostProcess(
        argv=argv,
        env=env,
        cwd=launch.cwd,
        events_path=launch.events_path,
        stderr_path=launch.stderr_path,
        # A host that reads its prompt on stdin reads it to the end: nothing more is sent.
        interactive=(registration.converses_on_stdin or not launch.one_shot)
        and not registration.prompt_on_stdin,
        no_progress_s=launch.no_progress_s,
        redactor=launch.redactor,
        guardian=home.guardian,
        takes_stdin=registration.prompt_on_stdin,
    )
    return argv, env, process


def host_record(host: Host, binary: Executable) -> HostBinaryRecord:
    """The run record's entry for the host: its binary and, for a host whose configuration
    decides what is enforced (Codex's sandbox), what it enforced."""
    record: HostBinaryRecord = {"version": binary.version, "command": str(binary.path)}
    started = getattr(binary, "record", None)
    if callable(started):  # a Node host: the runtime it ran on and the form that ran
        record.update(started())
    enforced = getattr(host, "enforced", None)
    if isinstance(enforced, dict):
        record["enforced"] = enforced
    return record


def simulated_usage(endpoint: Endpoint, usage: Usage | None) -> Usage | None:
    """A scripted or replayed run's usage priced by the evaluator's one table (the route's
    `cost`), whatever the host priced it at: hosts price an unknown model each their own way
    (Claude Code a third higher than the table), and simulated cost must compare across hosts.
    A live or recorded run keeps the host's own pricing (it is what was paid)."""
    served = endpoint.served
    if usage is None or endpoint.mode not in SIMULATED_MODES or served is None:
        return usage
    prices = served.cost or {}
    priced: UsageCost = {}
    total = 0.0
    for key in USAGE_FIELDS:
        cost = usage.get(key, 0) * prices.get(key, 0.0) / 1_000_000
        priced[key] = round(cost, 12)
        total += cost
    priced["total"] = round(total, 12)
    return {**usage, "cost": priced}


def spend_record(endpoint: Endpoint, usage: Usage | None) -> SpendRecord:
    """What the run cost in USD, and whether that money was spent or only simulated.

    A recording route prices what went upstream (replayed parts of a cassette are free); a
    live run costs what the host priced from the provider's usage; scripted and replayed
    runs report the host's priced usage as `simulated`, and the ledger never charges them.
    """
    reported = usage["cost"].get("total") if usage is not None else None
    usd = float(reported) if isinstance(reported, int | float) else 0.0
    if endpoint.spend is not None:
        usd = endpoint.spend()
    return {"usd": round(usd, 10), "simulated": endpoint.mode in SIMULATED_MODES}
