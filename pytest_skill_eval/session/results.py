"""The end of an invocation: finalise groups left half-run, record what the workers collected
but never recorded, then write the shard record or each result's summary and the aggregate."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Literal, Protocol

from ..analysis import adaptive
from ..analysis.trials import write_aggregate
from ..budget.ledger import FileLedger
from ..budget.ledger_url import safe_url
from ..definitions import VARIANTS, LoadedGroup
from ..errors import DiskFullError
from ..evidence import layout, read
from ..evidence import summary as result_records
from ..evidence.records import Budget
from ..evidence.summary import discard_unused_result, write_summary
from ..hosts.process import CancelToken
from ..run.group import GroupRun
from ..scale.shard import seal_shard, write_shard_record
from .services import Services

Outcome = Literal["failed", "interrupted"] | None
"""What the invocation's exit status becomes when it would otherwise be OK."""


class Finishing(Protocol):
    """The session as the finish reads it beside its services: its group runs, what it noted."""

    worker: bool
    items_started: bool
    disk_full_reported: bool
    evidence_missing: bool
    unreported_error: str | None
    started_at: str
    shard_root: str | None
    aggregate_dir: Path | None
    group_runs: dict[tuple[Path, str, int, str], GroupRun]
    collected: dict[tuple[str, int, str], set[str]]
    reported: set[tuple[str, str, int, str]]

    def group_run(self, loaded: LoadedGroup, trial: int, host: str | None = None) -> GroupRun: ...

    def adaptive_stop(self, run: GroupRun, *, wait: bool = True) -> adaptive.Stop | None: ...


def finish(services: Services, state: Finishing) -> Outcome:
    """Finalise groups left half-run, then (controller) write each result's summary.json.

    A shard writes its shard record instead: the summary is the merge's to write.
    """
    # Groups stopped half-way, and, once a session has run items (outside xdist workers, whose
    # groups other workers may own), selected groups that never started are recorded with the
    # rest `cancelled`.
    settings = services.settings
    stopped_early = state.items_started and not state.worker
    try:
        if state.disk_full_reported:
            # A full results disk stopped the invocation: its results stay unfinished (no group
            # record, manifest, summary or seal), so nothing it cut short is sealed.
            for run in state.group_runs.values():
                run.abandon()
            return "failed"
        for run in state.group_runs.values():
            run.abandon()  # a pre-start whose item never ran: as if it never started
        for run in state.group_runs.values():
            selected = any(run.selected.values())
            if run.finished is None and (run.started or (selected and stopped_early)):
                run.finalise(services.environment())
        if stopped_early:
            _finalise_unstarted(services, state)
        budget = services.ledger.snapshot() if services.ledger and not state.worker else None
        if services.shard_dir is not None and services.plan is not None and not state.worker:
            index, count = settings.shard or (1, 1)
            write_shard_record(
                services.shard_dir,
                services.plan,
                index,
                count,
                state.started_at,
                budget,
                ledger=safe_url(settings.ledger_url) if settings.ledger_url else None,
            )
            state.shard_root = seal_shard(services.shard_dir, services.plan)
            print(
                f"\nskill-eval: shard {index}/{count} evidence: {services.shard_dir} "
                f"seal sha256:{state.shard_root}"
            )
        elif stopped_early:
            _write_summaries(services, state, budget)
        elif not state.worker and services.plan is None:  # nothing ran: nothing is kept
            result_records.discard_unused_results(services.result_dirs, settings.results_dir)
    except DiskFullError as error:
        # The result stays unfinished (no summary, no seal); said once, after the summary.
        if not state.disk_full_reported:
            state.unreported_error = str(error)
        return "failed"
    finally:
        if isinstance(services.ledger, FileLedger) and not state.worker:
            shutil.rmtree(services.ledger.path.parent, ignore_errors=True)
        elif services.ledger is not None:
            services.ledger.close()
    if services.cancel.cancelled:
        return "interrupted"
    return "failed" if state.evidence_missing else None


def _write_summaries(services: Services, state: Finishing, budget: Budget | None) -> None:
    """Each trial's summary.json, and with several trials the aggregate over them."""
    settings, result_dirs = services.settings, services.result_dirs
    if settings.adaptive:
        # Trials every group stopped before recorded nothing but their invocation.
        for trial in [t for t in result_dirs if t > 1]:
            if discard_unused_result(result_dirs[trial]):
                del result_dirs[trial]
    for trial, result_dir in sorted(result_dirs.items()):
        write_summary(result_dir, trial, budget)
    if settings.trials > 1:
        state.aggregate_dir = write_aggregate(
            settings.results_dir,
            [result_dirs[t] for t in sorted(result_dirs)],
            settings.trials,
            budget,
            adaptive=settings.adaptive,
        )


def _finalise_unstarted(services: Services, state: Finishing) -> None:
    """xdist controller: record the groups the workers collected but left no record of.

    A group none of whose items was reported never started: `cancelled`. A variant whose item
    the controller saw reported ran somewhere, so `cancelled` would contradict JUnit: it is
    `infrastructure-failed`, saying where its evidence should have been.
    """
    settings = services.settings
    for (group_id, trial, host), variants in sorted(state.collected.items()):
        loaded = services.loaded_groups.get(group_id)
        result_dir = services.result_dirs.get(trial)
        if loaded is None or result_dir is None:
            continue
        group_dir = layout.group_dir(result_dir, group_id, host)
        if read.group_record(group_dir) is not None:
            continue
        chosen = host if settings.hosts else None
        if chosen is not None and loaded.group.cannot_run(chosen) is not None:
            continue  # its items were skips: nothing ran, nothing to record
        run = state.group_run(loaded, trial, chosen)
        if settings.adaptive and state.adaptive_stop(run, wait=False) is not None:
            continue  # the workers skipped it: the sequential test had resolved the group
        run.selected = {v: v in variants for v in VARIANTS}
        reported = [v for v in VARIANTS if (group_id, v, trial, host) in state.reported]
        if not reported:
            services.cancel.cancel("cancelled")
            run.finalise(services.environment())
            continue
        # Never prepare resources for a group that ran elsewhere.
        stopped = CancelToken()
        stopped.cancel("evidence missing")
        env = dataclasses.replace(services.environment(), cancel=stopped)
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
        state.evidence_missing = True
