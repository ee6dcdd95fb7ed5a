"""Per-process state of an invocation: settings, result directories, services, group runs."""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from .analysis import adaptive, floor_choice, noise_floor
from .analysis.trials import write_aggregate
from .budget.ledger import FileLedger, Ledger
from .budget.redis_ledger import open_ledger, safe_url
from .definitions import VARIANTS, DefinitionError, LoadedDefinition, LoadedGroup, load_definition
from .definitions.selection import recorded_selectors
from .errors import DiskFullError
from .evidence import create_result_dir, layout, read
from .evidence import summary as result_records
from .evidence.records import InvocationRecord
from .evidence.store import utc_now
from .evidence.summary import (
    discard_unused_result,
    invocation_definitions,
    write_invocation,
    write_summary,
)
from .grading import grade_group
from .hosts import check_environment, check_layers, checked_binary
from .hosts.base import Executable
from .hosts.pi.binary import PiBinary, checked
from .hosts.process import CancelToken
from .options import Settings, usage_errors
from .run import Environment, GroupRun, resume, synthetic_run
from .run.loop import Loop
from .run.providers import EndpointFactory
from .run.records import cannot_run_records
from .scale.plan import Plan, PlanError, check_groups, load_plan
from .scale.shard import create_shard_dir, seal_shard, write_shard_record
from .workspace import ResourceError, SourceResolver


class SkillEvalSession:
    """Per-process state: settings, result directories, services, and group runs.

    Registered as a plugin for the invocation (it notes that items ran) and unregistered, with
    its stash key removed, at unconfigure.
    """

    def __init__(self, config: pytest.Config, settings: Settings, *, worker: bool) -> None:
        self.config = config
        self.settings = settings
        self.worker = worker
        self.cancel = CancelToken()
        self.resolver = SourceResolver(settings.root)
        self.result_dirs: dict[int, Path] = {}
        self.group_runs: dict[tuple[Path, str, int, str], GroupRun] = {}
        # xdist controller only: what the workers collected (group, trial, host → variants),
        # and the groups it can finalise.
        self.collected: dict[tuple[str, int, str], set[str]] = {}
        # node id → group, variant, trial, host; and the items the controller saw reported.
        self.collected_ids: dict[str, tuple[str, str, int, str]] = {}
        self.reported: set[tuple[str, str, int, str]] = set()
        self.evidence_missing = False
        self.loaded_groups: dict[str, LoadedGroup] = {}
        self.items_started = False
        self.ledger: Ledger | None = None
        self.aggregate_dir: Path | None = None
        # `--skill-eval-trials auto`: the decision of each group run (group, trial, host) asked.
        self.stops: dict[tuple[Path, str, int, str], adaptive.Stop | None] = {}
        self.checked_pi: PiBinary | None = None
        # A full results disk: whether an item already said so, else the line to print at the end.
        self.disk_full_reported = False
        self.unreported_error: str | None = None
        self._pi_lock = threading.Lock()
        # A planned run (beyond one machine): the plan, this shard's directory and its units.
        self.plan: Plan | None = None
        self.shard_dir: Path | None = None
        self.shard_root: str | None = None  # the shard's seal, once written
        self.started_at = utc_now()
        with usage_errors():  # `--skill-eval-reuse`, `--skill-eval-affected-since`
            self.loop = Loop.from_config(config, settings.results_dir)
        if settings.plan is not None:
            with usage_errors():
                self.plan = load_plan(settings.plan)
            self.resolver = SourceResolver(settings.root, pinned=self.plan.data["pins"])
        self.endpoints = EndpointFactory(
            cassettes=settings.cassettes,
            record=settings.record,
            auth=settings.pi_auth,
            models=settings.pi_models,
            upstream_url=settings.upstream_url,
            binaries=self.binary,
        )

    # -- services ---------------------------------------------------------------------------

    def binary(self, host: str) -> Executable:
        """The checked binary of `host` (checked once per process; Pi's may be handed over)."""
        with self._pi_lock:
            if host != "pi":
                return checked_binary(host, self.settings.host_options(host), self.settings.root)
            if self.checked_pi is None:
                check_layers("pi")
                self.checked_pi = checked(self.settings.host_options("pi"), self.settings.root)
            return self.checked_pi

    def _hosts_in_use(self) -> set[str]:
        """The hosts the groups run on (their binaries are checked up front, and only theirs:
        a run on Codex neither needs Pi installed nor pays for `pi --version`)."""
        if self.settings.hosts:
            return set(self.settings.hosts)
        hosts: set[str] = set()
        for path in self.settings.paths:
            with contextlib.suppress(DefinitionError):
                for loaded in load_definition(path, self.settings.root).groups:
                    hosts.add(loaded.group.effective_runtime.host)
        return hosts

    def environment(self) -> Environment:
        """What a group needs to run its subjects in this process."""
        return Environment(
            root=self.settings.root,
            resolver=self.resolver,
            cancel=self.cancel,
            binary=self.binary,
            endpoint=self.endpoints.endpoint,
            no_progress_s=self.settings.no_progress_s,
            ledger=self.ledger,
            **self.loop.environment(self.settings, self.resolver, lambda h: self.binary(h).version),
            retries=self.settings.retries,
        )

    def result_dir(self, trial: int) -> Path:
        """The result directory of a trial (created by the controller)."""
        if trial not in self.result_dirs:
            _, path = create_result_dir(self.settings.results_dir)
            self.result_dirs[trial] = path
        return self.result_dirs[trial]

    def hosts_for(self, loaded: LoadedGroup) -> tuple[str, ...]:
        """The hosts a group runs on: the invocation's choice, else its declared host."""
        return self.settings.hosts or (loaded.group.effective_runtime.host,)

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
                moved, self.result_dir, trial, host_chosen=host is not None, declared_host=declared
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
            ran.append(self.result_dir(trial))
            if wait and earlier is not None and any(earlier.selected.values()):
                adaptive.wait_for_records(
                    [layout.group_dir(ran[-1], group.id, run.host)],
                    lambda: self.cancel.cancelled,
                    patience_s=4 * self.settings.no_progress_s,
                )
            stop = adaptive.stop_before(group, ran, run.host, self.settings.trials)
            if stop is not None:
                run.selected = dict.fromkeys(VARIANTS, False)
                break
        self.stops[key] = stop
        return stop

    def preview_grade(self, run: GroupRun, variant: str) -> dict[str, Any]:
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
        """Check the hosts in use, pin Git sources, open the ledger, and write each trial's
        invocation record."""
        settings = self.settings
        if not settings.collect_only:
            with usage_errors():
                for host in sorted(self._hosts_in_use()):
                    self.binary(host)
        definitions = []
        invalid = False
        for path in settings.paths:
            try:
                loaded = load_definition(path, settings.root)
            except DefinitionError:
                invalid = True  # reported as a collection error, with its pointer: no result
                continue
            definitions.append(loaded)
            self.loaded_groups.update({g.group.id: g for g in loaded.groups})
            for group in loaded.groups:
                for host in self.hosts_for(group):
                    if self.settings.hosts and group.group.cannot_run(host) is not None:
                        continue  # that host's items are skips
                    try:  # a variable of the host's isolation: a collection error, no result
                        check_environment(
                            group.path, group.group, host, chosen=bool(self.settings.hosts)
                        )
                    except DefinitionError:
                        invalid = True
                for variant in group.group.variants.values():
                    if variant.source.kind == "git":
                        # An unresolvable ref is recorded by the variant when it runs.
                        with contextlib.suppress(ResourceError):
                            self.resolver.resolve("git", variant.source.ref)
        if self.plan is not None:
            try:
                check_groups(self.plan, self.loaded_groups.values(), settings.root)
            except PlanError as error:
                raise pytest.UsageError(str(error)) from None
        if settings.collect_only or invalid:
            return
        if self.plan is not None:
            self._prepare_shard(self.plan)
            return
        with usage_errors():
            if settings.max_cost is not None:
                self.endpoints.check_priced(self.loaded_groups.values(), settings.max_cost)
            self.endpoints.check_credentials(definitions, settings.group_selectors, settings.hosts)
        self._open_ledger()
        self._write_invocations(definitions)

    def _write_invocations(self, definitions: list[LoadedDefinition]) -> None:
        """Write each trial's invocation record; its trials share the invocation's nonce."""
        settings = self.settings
        shared = secrets.token_hex(16)
        floor = floor_choice.Recorder(settings.results_dir, settings.noise_floor)
        for trial in range(1, settings.trials + 1):
            result_dir = self.result_dir(trial)
            invocation: InvocationRecord = {
                "schema_version": 1,
                "id": result_dir.name,
                "root": str(settings.root),
                "definitions": invocation_definitions(definitions),
                "selection": {
                    "group": recorded_selectors(settings.group_selectors),
                    "variant": settings.variant_selector,
                    "trial": trial,
                    "trials": settings.trials,
                },
                "pins": self.resolver.pinned(),
                "provider": {
                    "cassettes": str(settings.cassettes) if settings.cassettes else None,
                    "record": settings.record,
                },
                "failOn": settings.fail_on,
                "startedAt": utc_now(),
                "nonce": shared,
            }
            if settings.hosts:
                invocation["hosts"] = list(settings.hosts)
                invocation["cannotRun"] = cannot_run_records(
                    definitions, settings.group_selectors, settings.hosts
                )
            floor.record(invocation)
            inputs = self.environment().inputs
            self.loop.record(invocation, self.loaded_groups.values(), self.hosts_for, inputs)
            now = resume.current_inputs(inputs, self.loaded_groups)
            resume.carry_over(settings.resume, settings.results_dir, result_dir, invocation, now)
            write_invocation(result_dir, invocation)

    def _prepare_shard(self, plan: Plan) -> None:
        """A planned run: the plan's result ids inside a fresh shard directory, no invocation."""
        index, count = self.settings.shard or (1, 1)
        self.shard_dir = create_shard_dir(self.settings.results_dir, plan, index, count)
        self.result_dirs = {
            t: self.shard_dir / plan.result_id(t) for t in range(1, plan.trials + 1)
        }
        self._open_ledger()

    def _open_ledger(self) -> None:
        """Redis at the ledger URL (keyed by the plan, else the invocation), else a file ledger."""
        key = self.plan.id if self.plan is not None else self.result_dir(1).name
        with usage_errors():
            self.ledger = open_ledger(self.settings, key)

    def install_interrupt_handler(self, session: pytest.Session) -> None:
        """First Ctrl-C cancels cleanly (evidence kept, the rest cancelled); the second stops."""

        def stop(reason: str) -> None:
            session.shouldstop = reason

        self.cancel.on_interrupt(stop)

    def finish(self, session: pytest.Session) -> None:
        """Finalise groups left half-run, then (controller) write each result's summary.json.

        A shard writes its shard record instead: the summary is the merge's to write.
        """
        # Groups stopped half-way, and, once a session has run items (outside xdist workers,
        # whose groups other workers may own), selected groups that never started are recorded
        # with the rest `cancelled`.
        stopped_early = self.items_started and not self.worker
        try:
            if self.disk_full_reported:
                # A full results disk stopped the invocation: its results stay unfinished (no
                # group record, manifest, summary or seal), so nothing it cut short is sealed.
                for run in self.group_runs.values():
                    run.abandon()
                if session.exitstatus == pytest.ExitCode.OK:
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
                return
            for run in self.group_runs.values():
                run.abandon()  # a pre-start whose item never ran: as if it never started
            for run in self.group_runs.values():
                selected = any(run.selected.values())
                if run.finished is None and (run.started or (selected and stopped_early)):
                    run.finalise(self.environment())
            if stopped_early:
                self._finalise_unstarted()
            budget = self.ledger.snapshot() if self.ledger and not self.worker else None
            if self.shard_dir is not None and self.plan is not None and not self.worker:
                index, count = self.settings.shard or (1, 1)
                write_shard_record(
                    self.shard_dir,
                    self.plan,
                    index,
                    count,
                    self.started_at,
                    budget,
                    ledger=safe_url(self.settings.ledger_url) if self.settings.ledger_url else None,
                )
                self.shard_root = seal_shard(self.shard_dir, self.plan)
                print(
                    f"\nskill-eval: shard {index}/{count} evidence: {self.shard_dir} "
                    f"seal sha256:{self.shard_root}"
                )
            elif stopped_early:
                if self.settings.adaptive:
                    # Trials every group stopped before recorded nothing but their invocation.
                    for trial in [t for t in self.result_dirs if t > 1]:
                        if discard_unused_result(self.result_dirs[trial]):
                            del self.result_dirs[trial]
                for trial, result_dir in sorted(self.result_dirs.items()):
                    write_summary(result_dir, trial, budget)
                if self.settings.trials > 1:
                    self.aggregate_dir = write_aggregate(
                        self.settings.results_dir,
                        [self.result_dirs[t] for t in sorted(self.result_dirs)],
                        self.settings.trials,
                        budget,
                        adaptive=self.settings.adaptive,
                    )
            elif not self.worker and self.plan is None:  # nothing ran: nothing is kept
                result_records.discard_unused_results(self.result_dirs, self.settings.results_dir)
        except DiskFullError as error:
            # The result stays unfinished (no summary, no seal); said once, after the summary.
            if not self.disk_full_reported:
                self.unreported_error = str(error)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        finally:
            if isinstance(self.ledger, FileLedger) and not self.worker:
                shutil.rmtree(self.ledger.path.parent, ignore_errors=True)
            elif self.ledger is not None:
                self.ledger.close()
        if self.cancel.cancelled and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        if self.evidence_missing and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _finalise_unstarted(self) -> None:
        """xdist controller: record the groups the workers collected but left no record of.

        A group none of whose items was reported never started: `cancelled`. A variant whose
        item the controller saw reported ran somewhere, so `cancelled` would contradict JUnit:
        it is `infrastructure-failed`, saying where its evidence should have been.
        """
        for (group_id, trial, host), variants in sorted(self.collected.items()):
            loaded = self.loaded_groups.get(group_id)
            result_dir = self.result_dirs.get(trial)
            if loaded is None or result_dir is None:
                continue
            group_dir = layout.group_dir(result_dir, group_id, host)
            if read.group_record(group_dir) is not None:
                continue
            chosen = host if self.settings.hosts else None
            if chosen is not None and loaded.group.cannot_run(chosen) is not None:
                continue  # its items were skips: nothing ran, nothing to record
            run = self.group_run(loaded, trial, chosen)
            if self.settings.adaptive and self.adaptive_stop(run, wait=False) is not None:
                continue  # the workers skipped it: the sequential test had resolved the group
            run.selected = {v: v in variants for v in VARIANTS}
            reported = [v for v in VARIANTS if (group_id, v, trial, host) in self.reported]
            if not reported:
                self.cancel.cancel("cancelled")
                run.finalise(self.environment())
                continue
            # Never prepare resources for a group that ran elsewhere.
            stopped = CancelToken()
            stopped.cancel("evidence missing")
            env = dataclasses.replace(self.environment(), cancel=stopped)
            for variant in reported:
                message = (
                    f"evidence missing: a worker reported {group_id}[{variant}] (trial {trial}) "
                    f"but left no run record at {layout.run_file(group_dir, variant)}; its "
                    "evidence was written where this controller cannot read it (a worker on "
                    "another machine or in another directory)"
                )
                error = {"kind": "infrastructure", "message": message}
                run.record_unrun(variant, "infrastructure-failed", error, env)
            run.finalise(env)
            self.evidence_missing = True

    # -- hooks ------------------------------------------------------------------------------

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        """Note that items ran (xdist forwards this to the controller too)."""
        self.items_started = True

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """xdist controller: note each collected item a worker reported (it ran somewhere)."""
        parsed = self.collected_ids.get(report.nodeid)
        if parsed is not None and not self.worker:
            self.reported.add(parsed)


SESSION_KEY = pytest.StashKey[SkillEvalSession]()
"""Where the invocation's SkillEvalSession lives in `config.stash`."""

DISK_FULL_STOP = "skill-eval: the results disk is full"
"""Why a session stopped at a full results disk (an xdist worker tells its controller so)."""

_PLUGIN_NAME = "skill-eval-session"


def open_session(config: pytest.Config, settings: Settings, *, worker: bool) -> SkillEvalSession:
    """Create the session, stash it and register it as a plugin."""
    state = SkillEvalSession(config, settings, worker=worker)
    config.stash[SESSION_KEY] = state
    config.pluginmanager.register(state, _PLUGIN_NAME)
    return state


def close_session(config: pytest.Config) -> None:
    """Stop the loopback model server, unregister the session and drop its stash key."""
    state = config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    state.endpoints.close()
    if config.pluginmanager.is_registered(state):
        config.pluginmanager.unregister(state)
    del config.stash[SESSION_KEY]
