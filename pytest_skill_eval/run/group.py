"""One group of one result: start it once, run each variant (`run/variant.py`) and persist it
before its counterpart, pre-start the next subject, grade, finalise."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..definitions import VARIANTS as VARIANT_NAMES
from ..definitions import LoadedGroup
from ..evidence import layout, read, store
from ..evidence.records import RunRecord
from ..evidence.store import DiskFullError, EvidenceError, utc_now
from ..hosts.base import PromptGate
from ..hosts.subject import Endpoint, SubjectResult
from ..workspace import ResourceError
from ..workspace.materialise import (
    GroupResources,
    PreparedVariant,
    prepare_group,
    prepare_variant,
)
from . import prestart
from .converse import converse
from .environment import Environment
from .records import (
    cancelled_before_execution,
    grade_and_record,
    host_record,
    never_ran,
    persist_fallback,
    ran_unrecorded,
    stamp_nonce,
    synthetic_run,
    unpersisted_run,
    unstartable,
)
from .reuse import VariantInputs

# Files only a started subject leaves in its variant directory.
SUBJECT_OUTPUT = (layout.EVENTS, layout.STDERR, layout.EVENTS_PARTIAL, layout.STDERR_PARTIAL)

# Widened to str: the run and grade mappings here are keyed by plain strings.
VARIANTS: tuple[str, ...] = VARIANT_NAMES


@dataclass
class GroupRun:
    """The shared state of one group in one result; its variant items run in order."""

    loaded: LoadedGroup
    results: Callable[[int], Path]  # trial → result directory, created on first use
    trial: int
    # Whether --skill-eval-host chose the host (`loaded` is then already moved onto it).
    host_chosen: bool = False
    declared_host: str | None = None
    selected: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(VARIANTS, True))
    runs: dict[str, RunRecord] = field(default_factory=dict)
    resources: GroupResources | None = None
    resource_error: str | None = None
    started: bool = False
    subjects_started: set[str] = field(default_factory=set)
    finished: dict[str, Any] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    start_lock: threading.Lock = field(default_factory=threading.Lock)
    # When the group record says it completed (a merge passes the shards' own time).
    clock: Callable[[], str] = utc_now
    # A variant started while the subject before it waits on the model (its first prompt held):
    # the candidate during its baseline, or the first variant during another group's last.
    prestarted: prestart.Prestart | None = None
    # Per variant: its inputs, and the earlier run it reuses or why it reuses none.
    inputs: VariantInputs = field(default_factory=VariantInputs)

    @property
    def result_dir(self) -> Path:
        """The trial's result directory (collection alone never creates one)."""
        return self.results(self.trial)

    @property
    def host(self) -> str:
        """The host this group runs on (declared, or chosen by the invocation)."""
        return self.loaded.group.effective_runtime.host

    @property
    def group_dir(self) -> Path:
        """`<result>/groups/<id>`, or `<id>@<host>` off Pi."""
        return layout.group_dir(self.result_dir, self.loaded.group.id, self.host)

    def start(self, env: Environment, *, held: bool = False) -> bool:
        """Start the group once (its directory, definition and resources); True when this call
        created its directory. A pre-start (`held`) starts it from another thread; if that
        fails, the start is undone, so the item's own start meets the failure as without it."""
        with self.start_lock:
            if self.started:
                return False
            self.started = True
            existed = self.group_dir.exists()
            try:
                return self._begin(env)
            except Exception as error:
                if not held:
                    raise
                self._unstart(remove=not existed)
                raise prestart.NotStarted(str(error)) from error

    def _unstart(self, *, remove: bool) -> None:
        """The group back to not started (its directory removed, when `remove`): a pre-start's
        start undone. A directory that cannot be removed is adopted by the next start."""
        self.started, self.resources, self.resource_error = False, None, None
        if remove:
            with contextlib.suppress(OSError):
                prestart.remove(self.group_dir)

    def _begin(self, env: Environment) -> bool:
        try:
            self.group_dir.mkdir(parents=True)
        except FileExistsError:
            # Started by a process that stopped before finalising: keep what it recorded.
            self._adopt()
            return False
        store.write_json_once(self.group_dir / layout.DEFINITION, self.loaded.raw)
        if env.cancel.cancelled:
            return True
        try:
            self.resources = prepare_group(self.loaded.group, env.root, self.group_dir)
        except (ResourceError, OSError) as error:
            self.resource_error = str(error)
        return True

    def _adopt(self) -> None:
        for variant in VARIANTS:
            found = read.read_run(self.group_dir / variant)
            if found is not None:
                self.runs[variant] = found[1].copy()
        record = read.group_record(self.group_dir)
        if record is not None and (self.group_dir / layout.MANIFEST).is_file():
            # Finished before this invocation (carried over by --skill-eval-resume): never redone.
            grade, folder = read.read_grade(self.group_dir, record), self.group_dir
            self.finished = {"group": record, "grade": grade, "runs": self.runs, "dir": folder}

    def unstartable(self, variant: str, env: Environment) -> SubjectResult | None:
        """Why no subject may start now besides cancellation: the budget, the resources."""
        ready = self.resource_error is None and self.resources is not None
        refused = unstartable(self.loaded, variant, env.ledger, ready, self.resource_error)
        return None if refused is None else never_ran(refused)

    def discard_prestarted(self, *, undo_start: bool = False) -> None:
        """A pre-started variant whose run will not begin: killed, reaped, its directory gone;
        with `undo_start`, the group too when only the pre-start had started it."""
        pre, self.prestarted = self.prestarted, None
        if pre is None:
            return
        with contextlib.suppress(OSError):  # what is left records as a subject that started
            pre.discard()
        if undo_start and pre.opened_group and not self.runs:
            self._unstart(remove=True)

    @contextlib.contextmanager
    def prestarting_next(
        self,
        variant: str,
        received: Callable[[], int] | None,
        eligible: Endpoint | None,
        env: Environment,
    ) -> Iterator[None]:
        """While `variant`'s subject runs, pre-start the next subject (when, `prestart.begins`
        says): this group's candidate after its baseline, else the next group's first variant."""
        pre: prestart.Prestart | None = None
        if (
            received is not None
            and eligible is not None
            and not env.cancel.cancelled
            and prestart.applies(self.loaded.group, eligible, env.binary)
        ):
            may_begin = prestart.begins(received, env.workers)
            if variant == "baseline" and self.selected.get("candidate"):
                pre = self._prestart("candidate", env, may_begin, eligible)
            elif env.next_run is not None:
                pre = env.next_run.prestart_first(env, may_begin, eligible)
        try:
            yield
        finally:
            if pre is not None:
                pre.running_done.set()

    def prestart_first(
        self, env: Environment, may_begin: Callable[[], bool], eligible: Endpoint
    ) -> prestart.Prestart | None:
        """Pre-start this group's first variant while another group's last subject runs in this
        process (this group's item comes next). Never with reuse: that run may be copied."""
        variant = next((v for v in VARIANTS if self.selected.get(v)), None)
        if (
            variant is None
            or env.reuse is not None
            or self.started
            or self.group_dir.exists()  # carried over or left by another process: not ours
            or not prestart.applies(self.loaded.group, eligible, env.binary)
        ):
            return None
        return self._prestart(variant, env, may_begin, eligible, first=True)

    def _prestart(
        self,
        variant: str,
        env: Environment,
        may_begin: Callable[[], bool],
        eligible: Endpoint,
        *,
        first: bool = False,
    ) -> prestart.Prestart | None:
        """Start `variant`'s subject behind a held gate once `may_begin()` (see `run/prestart.py`);
        `first`: the group is started then too, in the pre-start's thread."""
        directory = self.group_dir / variant

        def startable() -> bool:
            taken = variant in self.runs or self.inputs.reuses(variant) or directory.exists()
            return self.resources is not None and not taken

        if self.prestarted is not None and self.prestarted.unused:
            self.discard_prestarted()  # it never reached its start: make way for this one
        if self.prestarted is not None or not (first or startable()):
            return None

        def prepare() -> PreparedVariant:
            if first:
                pre.opened_group = self.start(env, held=True)
                with self.start_lock:
                    self.inputs.decide(env.inputs, env.reuse, self.loaded, self.host, self.trial)
                if not startable() or self.unstartable(variant, env) is not None:
                    raise prestart.NotStarted(variant)
            directory.mkdir()
            pre.created = True
            assert self.resources is not None
            return prepare_variant(
                self.loaded.group, variant, env.root, directory, self.resources, env.resolver
            )

        def run(prepared: PreparedVariant, gate: PromptGate) -> SubjectResult:
            endpoint = env.endpoint(
                self.loaded, variant, self.trial, prepared.placeholders(), prepared.workspace
            )
            pre.endpoint = endpoint
            return converse(self.loaded.group, prepared, endpoint, env, gate)

        pre = prestart.Prestart(
            variant=variant,
            directory=directory,
            eligible=eligible,
            may_begin=may_begin,
            cancelled=lambda: env.cancel.cancelled,
            prepare=prepare,
            run=run,
        )
        self.prestarted = pre
        return pre.start()

    def _subject_started(self, variant: str) -> bool:
        """Whether this variant's subject started here, or left host output from another process."""
        if variant in self.subjects_started:
            return True
        return any((self.group_dir / variant / name).exists() for name in SUBJECT_OUTPUT)

    def ran_unrecorded(self, variant: str, why: str) -> RunRecord:
        """A subject that started but left no run record: infrastructure-failed, never cancelled."""
        return ran_unrecorded(self.loaded, variant, self.group_dir / variant, why)

    def cancelled_before_execution(self, variant: str) -> RunRecord:
        """The one way to record a run "Cancelled before subject execution" (never started)."""
        if self._subject_started(variant):
            raise AssertionError(f"{variant} started: it cannot be cancelled before execution")
        return cancelled_before_execution(self.loaded, variant)

    def persist(self, variant: str, result: SubjectResult) -> RunRecord:
        variant_dir = self.group_dir / variant
        run = result.run
        stamp_nonce(run)
        host = host_record(self.host, self.host_chosen, self.declared_host)
        if host is not None:
            run["host"] = host
        full = result.disk_full
        try:
            store.write_json_once(variant_dir / layout.TRANSCRIPT, result.transcript)
            store.write_once(variant_dir / layout.FINAL, (result.response + "\n").encode("utf-8"))
            store.write_json_once(variant_dir / layout.RUN, run)
        except EvidenceError as error:
            # The run stays on record with its transcript inline; the failure sits beside it.
            full = full or (error if isinstance(error, DiskFullError) else None)
            run = unpersisted_run(run, result.transcript, str(error))
            try:
                persist_fallback(variant_dir, run)
            except DiskFullError as failed:
                raise full or failed from None  # the first write the full disk refused
        self.runs[variant] = run
        if full is not None:
            # The run is on record as far as it could be; every later write would fail alike.
            raise full
        return run

    def record_unrun(
        self, variant: str, state: str, error: dict[str, str], env: Environment
    ) -> None:
        """Record a variant that will not run here (its evidence is elsewhere or never came)."""
        with self.lock:
            self.discard_prestarted(undo_start=True)
            self.start(env)
            if variant not in self.runs:
                (self.group_dir / variant).mkdir(exist_ok=True)
                synthetic = synthetic_run(self.loaded, variant, state, error)
                self.persist(variant, never_ran(synthetic))

    def abandon(self) -> None:
        """Call off a pre-started subject whose item will not run here (the session ends; a full
        disk leaves the group unfinished): a group only the pre-start had started is undone."""
        with self.lock:
            self.discard_prestarted(undo_start=True)

    def finalise(self, env: Environment) -> dict[str, Any]:
        """Synthesise missing variants, grade, and write the grade, group record and manifest."""
        with self.lock:
            if self.finished is not None:
                return self.finished
            self.discard_prestarted(undo_start=True)
            self.start(env)
            for variant in VARIANTS:
                if variant in self.runs:
                    continue
                (self.group_dir / variant).mkdir(exist_ok=True)
                if self._subject_started(variant):
                    synthetic = self.ran_unrecorded(variant, "its item stopped first")
                elif not self.selected[variant]:
                    synthetic = synthetic_run(self.loaded, variant, "not-selected", None)
                else:
                    synthetic = self.cancelled_before_execution(variant)
                self.persist(variant, never_ran(synthetic))
            self.finished = grade_and_record(
                self.group_dir,
                self.loaded,
                self.trial,
                self.runs,
                self.selected,
                resource_failed=self.resource_error is not None,
                host=self.host,
                completed_at=self.clock(),
            )
            return self.finished
