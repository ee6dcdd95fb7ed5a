"""Per-process state of an invocation: its services, and what its items and group runs did.

The session is split by role: its `services` (`session/services.py`: sources, binaries,
endpoints, the ledger, result directories, definitions), the controller's preparation
(`session/invocation.py`) and the finish (`session/results.py`); the session holds the group
runs and what was collected and reported, is stashed and is registered as a plugin for the
invocation.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
from pathlib import Path

import pytest

from ..analysis import adaptive, noise_floor
from ..definitions import VARIANTS, LoadedGroup
from ..evidence import layout, shapes
from ..evidence.records import GradeRecord
from ..evidence.store import utc_now
from ..grading import grade_group
from ..hosts import check_environment
from ..options import usage_errors
from ..options.settings import Settings
from ..run import GroupRun, synthetic_run
from ..run.loop import Loop
from ..scale.plan import Plan, load_plan
from . import invocation, results
from .services import Services

OUTCOME = {"failed": pytest.ExitCode.TESTS_FAILED, "interrupted": pytest.ExitCode.INTERRUPTED}


class SkillEvalSession:
    """Per-process state: its services, its group runs and what its items did.

    Registered as a plugin for the invocation (it notes that items ran) and unregistered, with
    its stash key removed, at unconfigure.
    """

    def __init__(
        self, config: pytest.Config, settings: Settings, *, worker: bool, workers: int
    ) -> None:
        with usage_errors():  # `--skill-eval-reuse`, `--skill-eval-affected-since`, the plan
            loop = Loop.from_config(config, settings.results_dir)
            plan: Plan | None = load_plan(settings.plan) if settings.plan is not None else None
        self.settings = settings
        self.services = Services(
            settings,
            loop,
            plan,
            keyword=config.option.keyword or "",
            rootpath=config.rootpath,
            workers=workers,
        )
        self.config = config
        self.worker = worker
        self.group_runs: dict[tuple[Path, str, int, str], GroupRun] = {}
        # xdist controller only: what the workers collected (group, trial, host → variants),
        # and the groups it can finalise.
        self.collected: dict[tuple[str, int, str], set[str]] = {}
        # node id → group, variant, trial, host; and the items the controller saw reported.
        self.collected_ids: dict[str, tuple[str, str, int, str]] = {}
        self.reported: set[tuple[str, str, int, str]] = set()
        self.evidence_missing = False
        self.items_started = False
        self.readers_built = False  # the evidence readers (`evidence.shapes`)
        self.aggregate_dir: Path | None = None
        # `--skill-eval-trials auto`: the decision of each group run (group, trial, host) asked.
        self.stops: dict[tuple[Path, str, int, str], adaptive.Stop | None] = {}
        # A full results disk: whether an item already said so, else the line to print at the end.
        self.disk_full_reported = False
        self.unreported_error: str | None = None
        self.shard_root: str | None = None  # a shard's seal, once written
        self.started_at = utc_now()

    def group_run(self, loaded: LoadedGroup, trial: int, host: str | None = None) -> GroupRun:
        """The shared GroupRun of a group on a host in a trial's result.

        With `host` (chosen by the invocation) the group runs on it instead of its declared
        host; ask `Group.cannot_run` first (a host that cannot run it raises the rule error),
        and a group that declares a variable of the host's isolation raises a DefinitionError.
        """
        declared = loaded.group.effective_runtime.host
        on = host or declared
        key = (loaded.path, loaded.group.id, trial, on)
        if key not in self.group_runs:
            moved = noise_floor.on_host(loaded, on, identical=self.settings.noise_floor)
            check_environment(loaded.path, moved.group, on, chosen=host is not None)
            self.group_runs[key] = GroupRun(
                moved,
                self.services.result_dir,
                trial,
                host_chosen=host is not None,
                declared_host=declared,
            )
        return self.group_runs[key]

    def adaptive_stop(self, run: GroupRun, *, wait: bool = True) -> adaptive.Stop | None:
        """`--skill-eval-trials auto`: whether `run`'s group needs no trial `run.trial`.

        Decided trial after trial from the persisted grades of the earlier trials, waiting for
        one still running on another worker (`wait`); a stopped run is deselected, so nothing
        records it. A wait that runs out of patience runs the trial: one more trial is honest.
        """
        group = run.loaded.group
        key = (run.loaded.path, group.id, run.trial, run.host)
        if key in self.stops:
            return self.stops[key]
        stop: adaptive.Stop | None = None
        ran: list[Path] = []
        for trial in range(1, run.trial):
            earlier = self.group_runs.get((run.loaded.path, group.id, trial, run.host))
            ran.append(self.services.result_dir(trial))
            if wait and earlier is not None and any(earlier.selected.values()):
                adaptive.wait_for_records(
                    [layout.group_dir(ran[-1], group.id, run.host)],
                    lambda: self.services.cancel.cancelled,
                    patience_s=4 * self.settings.no_progress_s,
                )
            stop = adaptive.stop_before(group, ran, run.host, self.settings.trials)
            if stop is not None:
                run.selected = dict.fromkeys(VARIANTS, False)
                break
        self.stops[key] = stop
        return stop

    def preview_grade(self, run: GroupRun, variant: str) -> GradeRecord:
        """Grade one variant's checks before its counterpart exists (same rules, not persisted)."""
        other = "candidate" if variant == "baseline" else "baseline"
        runs = {
            variant: run.runs[variant],
            other: synthetic_run(run.loaded, other, "not-selected", None),
        }
        dirs = {v: run.group_dir / v for v in runs}
        return grade_group(run.loaded.raw, runs, dirs, dict.fromkeys(runs, ""))

    # -- lifecycle --------------------------------------------------------------------------

    def prepare_controller(self) -> None:
        """Check the hosts in use, pin Git sources, open the ledger, write each trial's
        invocation record (`session/invocation.py`; call it under `options.usage_errors`)."""
        invocation.prepare_controller(self.services)

    def install_interrupt_handler(self, session: pytest.Session) -> None:
        """First Ctrl-C cancels cleanly (evidence kept, the rest cancelled); the second stops."""

        def stop(reason: str) -> None:
            session.shouldstop = reason

        self.services.cancel.on_interrupt(stop)

    def finish(self, session: pytest.Session) -> None:
        """Finalise what ran and write the results (`session/results.py`); a run that stopped at a
        full disk, was cancelled or lost a worker's evidence does not pass."""
        outcome = results.finish(self.services, self)
        if outcome is not None and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = OUTCOME[outcome]

    # -- hooks ------------------------------------------------------------------------------

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        """Note that items ran (xdist forwards this to the controller too)."""
        self.items_started = True

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """xdist controller: note each collected item a worker reported (it ran somewhere).

        Once the first item has ended, the summary's evidence readers are built: an xdist
        controller otherwise built them after the last item, between it and the summary
        (about 0.05 s), while it has little else to do before."""
        parsed = self.collected_ids.get(report.nodeid)
        if parsed is not None and not self.worker:
            self.reported.add(parsed)
        if report.when == "teardown" and not self.worker and not self.readers_built:
            self.readers_built = True
            # One that cannot be built fails where it is used, as it did before.
            with contextlib.suppress(Exception):
                shapes.build_all()


SESSION_KEY = pytest.StashKey[SkillEvalSession]()
"""Where the invocation's SkillEvalSession lives in `config.stash`."""

DISK_FULL_STOP = "skill-eval: the results disk is full"
"""Why a session stopped at a full results disk (an xdist worker tells its controller so)."""

_PLUGIN_NAME = "skill-eval-session"


def open_session(
    config: pytest.Config, settings: Settings, *, worker: bool, workers: int
) -> SkillEvalSession:
    """Create the session (in one of `workers` evaluator processes), stash it and register it
    as a plugin; the process's heap is frozen as it exits (`_freeze_at_exit`)."""
    _freeze_at_exit()
    state = SkillEvalSession(config, settings, worker=worker, workers=workers)
    config.stash[SESSION_KEY] = state
    config.pluginmanager.register(state, _PLUGIN_NAME)
    return state


def _freeze_at_exit() -> None:
    """Freeze the heap as the interpreter exits, once however many sessions the process runs.

    The interpreter's last act is a garbage collection over everything alive: for a session's
    controller (the reports, results and views it built) 0.13–0.23 s of a `-n 8` run's
    0.4–0.6 s from its last item to its end, paid after the summary is printed. An exit handler
    runs before it, and only when the process really exits: a process that runs pytest again
    (`pytest.main` in a long-lived one) keeps its collector as it was. What is frozen then is
    never finalised by that collection; Python does not promise finalisers at exit, and the
    plugin leaves nothing that needs one (evidence is written and sealed before).
    """
    atexit.unregister(gc.freeze)  # registered by an earlier session of this process
    atexit.register(gc.freeze)


def close_session(config: pytest.Config) -> None:
    """Stop the loopback model server, unregister the session and drop its stash key."""
    state = config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    state.services.endpoints.close()
    if config.pluginmanager.is_registered(state):
        config.pluginmanager.unregister(state)
    del config.stash[SESSION_KEY]
