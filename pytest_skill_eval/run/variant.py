"""One variant of a group run: a sequence of named steps, and the ways each may be taken.

`Step` names them in order: the group's START (once, for all its variants), the variant's
MATERIALISE and CONVERSE, then PERSIST; GRADE and FINALISE are the group's (`GroupRun.finalise`).

A loop feature attaches to a step rather than branching inside it:
- `WAYS` are how a variant materialises and converses, tried in order, the first that answers
  deciding: reused (`run/reuse.py`), pre-started (`run/prestart.py`), refused (cancelled, the
  budget, the resources), fresh;
- `AFTER` run, in order, once the run is persisted, each given the persisted run and returning
  the variant's run: retries (`run/attempts.py`) persist another attempt in its place.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..evidence.records import AttemptRecord, RunRecord
from ..hosts import UnadoptedBinaryError
from ..hosts.layers import SystemLayerError
from ..hosts.subject import SetupError, SubjectResult
from ..workspace import ResourceError
from ..workspace.materialise import PreparedVariant, prepare_variant, resources_json
from . import attempts
from .converse import converse
from .environment import Environment
from .providers import EndpointError
from .records import never_ran, synthetic_run

if TYPE_CHECKING:
    from .group import GroupRun


class Step(enum.Enum):
    """A variant's run, step by step (`VariantRun.run` takes them in this order)."""

    START = "start"  # the group, once: its directory, definition and resources; inputs decided
    MATERIALISE = "materialise"  # the variant's directory and workspace (or a copied run)
    CONVERSE = "converse"  # the subject against its model endpoint
    PERSIST = "persist"  # transcript, final answer and run record, each written once
    GRADE = "grade"  # the group's, once every variant is persisted
    FINALISE = "finalise"  # the group's: missing variants recorded, the group record, manifest


class VariantRun:
    """One variant of `group` run in this process with `env` (its item, or a retry of it)."""

    def __init__(self, group: GroupRun, variant: str, env: Environment) -> None:
        self.group = group
        self.variant = variant
        self.env = env
        self.again = False  # a later attempt: never reused; its directory holds the earlier
        self.steps: list[Step] = []  # the steps taken so far, in order

    @property
    def directory(self) -> Path:
        """The variant's directory in its group's."""
        return self.group.group_dir / self.variant

    def run(self) -> RunRecord:
        """Take the steps in order; returns the persisted run record."""
        group, env = self.group, self.env
        with group.lock:
            self.steps.append(Step.START)
            group.start(env)
            if group.finished is not None:  # carried over: never redone
                group.discard_prestarted()
                return group.runs[self.variant]
            with group.start_lock:  # a pre-start of this group may be deciding them too
                group.inputs.decide(env.inputs, env.reuse, group.loaded, group.host, group.trial)
            run = self.persist(self.converse())
            for after in AFTER:
                run = after(self, run)
            return run

    def converse(self) -> SubjectResult:
        """MATERIALISE and CONVERSE by the first of `WAYS` that answers."""
        self.steps += [Step.MATERIALISE, Step.CONVERSE]
        for way in WAYS:
            result = way(self)
            if result is not None:
                return result
        raise AssertionError("a fresh run always answers")

    def persist(self, result: SubjectResult) -> RunRecord:
        """PERSIST: the run record names its inputs (and why it was not reused), then is written."""
        self.steps.append(Step.PERSIST)
        self.group.inputs.note(self.variant, result.run)
        return self.group.persist(self.variant, result)


def reused(run: VariantRun) -> SubjectResult | None:
    """The run copied from an earlier sealed result whose inputs hash the same (first attempt)."""
    group = run.group
    if run.again or run.env.cancel.cancelled or group.resources is None:
        return None
    taken = group.inputs.take(run.variant, group.group_dir)
    return SubjectResult(*taken) if taken else None


def prestarted(run: VariantRun) -> SubjectResult | None:
    """The pre-started subject's run, its gate opened now that its run may begin; None when
    there is none, or it may not run (then discarded, as if it never started)."""
    group, variant, env = run.group, run.variant, run.env
    pre = group.prestarted
    if pre is None or pre.variant != variant:
        return None
    group.prestarted = None
    if env.cancel.cancelled or group.unstartable(variant, env) is not None:
        pre.discard()  # the usual path records why, as for a variant that never started
        return None
    with group.prestarting_next(variant, pre.received, pre.eligible, env):
        claimed = pre.claim()
    if claimed is None:
        return None
    prepared, outcome = claimed

    def attempt() -> SubjectResult:
        group.subjects_started.add(variant)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return conclude(group, prepared, attempt, env)


def refused(run: VariantRun) -> SubjectResult | None:
    """The variant's directory (a later attempt's holds the earlier ones), then why its subject
    may not start now, if so: cancelled, the budget, the resources."""
    group, variant, env = run.group, run.variant, run.env
    run.directory.mkdir(exist_ok=run.again)
    if env.cancel.cancelled:
        return never_ran(group.cancelled_before_execution(variant))
    return group.unstartable(variant, env)


def fresh(run: VariantRun) -> SubjectResult:
    """Its workspace materialised, the subject converses with its model endpoint."""
    group, variant, env = run.group, run.variant, run.env
    assert group.resources is not None  # checked by `refused`
    try:
        prepared = prepare_variant(
            group.loaded.group, variant, env.root, run.directory, group.resources, env.resolver
        )
    except (ResourceError, OSError) as error:
        msg = {"kind": "setup", "message": str(error)}
        return never_ran(synthetic_run(group.loaded, variant, "invalid", msg))

    def attempt() -> SubjectResult:
        endpoint = env.endpoint(
            group.loaded, variant, group.trial, prepared.placeholders(), prepared.workspace
        )
        group.subjects_started.add(variant)
        with group.prestarting_next(variant, endpoint.received, endpoint, env):
            return converse(group.loaded.group, prepared, endpoint, env)

    return conclude(group, prepared, attempt, env)


def retried(run: VariantRun, persisted: RunRecord) -> RunRecord:
    """`--skill-eval-retries`: an infrastructure-failed run set aside whole under attempts/,
    the variant runs again (never reused), until one is not or the retries are spent."""
    group, variant, env = run.group, run.variant, run.env
    earlier: list[AttemptRecord] = []
    while attempts.retryable(persisted, len(earlier), env.retries, env.cancel.cancelled):
        earlier.append(attempts.set_aside(run.directory, len(earlier) + 1, persisted))
        del group.runs[variant]
        group.subjects_started.discard(variant)
        run.again = True
        result = run.converse()
        result.run["attempts"] = attempts.record(earlier)
        persisted = run.persist(result)
    return persisted


Way = Callable[[VariantRun], SubjectResult | None]
After = Callable[[VariantRun, RunRecord], RunRecord]

WAYS: tuple[Way, ...] = (reused, prestarted, refused, fresh)
"""How a variant materialises and converses, in the order they are tried."""

AFTER: tuple[After, ...] = (retried,)
"""What runs once a variant's run is persisted, in order."""


def conclude(
    group: GroupRun,
    prepared: PreparedVariant,
    attempt: Callable[[], SubjectResult],
    env: Environment,
) -> SubjectResult:
    """The subject's result, or the run its failure records; the spend charged."""
    loaded, variant = group.loaded, prepared.variant
    assert group.resources is not None
    try:
        result = attempt()
    except (EndpointError, SystemLayerError, UnadoptedBinaryError) as error:
        msg = {"kind": "infrastructure", "message": str(error)}
        run = synthetic_run(loaded, variant, "infrastructure-failed", msg)
    except SetupError as error:
        run = synthetic_run(loaded, variant, "invalid", {"kind": "setup", "message": str(error)})
    except Exception as error:
        # The subject ran (or was starting): whatever failed, it is never `cancelled`.
        run = group.ran_unrecorded(variant, f"{type(error).__name__}: {error}")
    else:
        result.run["resources"] = resources_json(prepared, group.resources, loaded.group)
        _charge(result, env)
        return result
    run["resources"] = resources_json(prepared, group.resources, loaded.group)
    run["workspace"] = str(prepared.workspace)
    return never_ran(run)


def _charge(result: SubjectResult, env: Environment) -> None:
    """Charge a live run's spend to the ledger (scripted and replayed spend is never charged)."""
    spend = result.run.get("spend")
    if env.ledger is None or not spend or spend.get("simulated"):
        return
    try:
        env.ledger.charge(float(spend.get("usd") or 0.0))
    except OSError as error:
        # The spend is on record in run.json; the ceiling can no longer be enforced.
        cause = result.run.get("error")
        result.run["state"] = "infrastructure-failed"
        result.run["error"] = {
            "kind": "infrastructure",
            "message": f"budget ledger unusable, spend not charged: {error}",
            "cause": cause,
        }


def run_variant(group: GroupRun, variant: str, env: Environment) -> RunRecord:
    """Run (or synthesise) one variant of `group` and persist it, step by step; returns the
    persisted run record."""
    return VariantRun(group, variant, env).run()
