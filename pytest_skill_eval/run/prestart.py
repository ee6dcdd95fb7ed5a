"""The next subject's host started while the current one waits on the model, its prompt held.

A host start-up is mostly CPU (Node loading Pi), a subject's run mostly waiting on the model.
Once the running subject's host has reached the model (its endpoint received a request, so the
start-ups of busy workers never compete), the next subject is prepared completely (workspace,
isolated home, endpoint, environment) and its host spawned, through the same start-up slots as
any other. A run with fewer workers than start-up slots (a serial run on a machine with more
than one core) leaves a core that none of its subjects uses: there the pre-start begins at once,
beside the running subject, and the next host loads on that core (`begins`). It then waits,
unprompted, at its `PromptGate`. The next subject is the group's candidate while its
baseline runs, and while a group's last variant runs, the first variant of the group whose item
this process runs next (pytest's `nextitem`): without that, every group's first start-up was
paid on the critical path of its worker.

The gate opens only when that variant's own run begins (`run.variant.run_variant`), which always
follows the earlier run's persisted record: the evidence contract (the baseline on record
before the candidate's run, nothing shared between them) holds as without pre-start. A group
that is cancelled or stops first aborts the gate: the host is killed and reaped, and everything
the pre-start put in the variant's directory is removed (the group's too, when only the
pre-start had started the group), so it is recorded exactly as a variant that never ran. A
pre-started run that never sent its first prompt (its host ended while it was held, too) is
discarded the same way and the variant runs as usual, so a pre-start never changes what is
recorded.

`SKILL_EVAL_PRESTART=0` turns pre-start off.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..definitions import Group
from ..errors import HostError
from ..hosts import startup
from ..hosts.base import ConfinableReads, Endpoint, Executable, PromptGate
from ..hosts.registry import registration_for
from ..hosts.subject import SubjectResult
from ..workspace.materialise import PreparedVariant

ENV = "SKILL_EVAL_PRESTART"
POLL_S = 0.05
# Modes whose model traffic the evaluator serves and sees, at no cost: a pre-start there can
# neither spend money nor write a cassette before its run begins.
MODES = ("scripted", "replay")
# The tools whose paths the evaluation guard confines to the variant's own roots; with any
# other (bash, ls, find, grep) the baseline could see the candidate's directory appear.
CONTAINED_TOOLS = frozenset({"read", "write", "edit"})


def enabled() -> bool:
    """Whether pre-start is on (`SKILL_EVAL_PRESTART=0` turns it off)."""
    return os.environ.get(ENV, "").strip() != "0"


def applies(group: Group, baseline: Endpoint, binary: Callable[[str], Executable]) -> bool:
    """Whether a candidate can be pre-started next to this baseline.

    Only a host that holds its first prompt for a gate (`defers_first_prompt`: Pi's rpc mode,
    opencode's prompt, Claude Code's stream-json prompts on stdin, Codex's app-server), and a
    one-shot run only on a host that reads its prompt on stdin (Pi's one-shot prompt is in argv:
    spawning it is prompting it; opencode's start is worth moving, a one-shot Codex's is not);
    only when the baseline's endpoint says when its host reached the model, in a mode that
    costs nothing; and only when the baseline can see nothing of the candidate's directory
    appearing beside its own (every offered tool is one the guard keeps inside the variant's
    roots, no declared commands, and a host binary that confines reads does: `binary` gives it
    by host name).
    """
    if not enabled() or group.commands is not None:
        return False
    if baseline.received is None or baseline.mode not in MODES:
        return False
    if not set(group.tools) <= CONTAINED_TOOLS:
        return False
    try:
        registration = registration_for(group.effective_runtime.host)
    except LookupError:
        return False
    if group.is_one_shot and not registration.prompt_on_stdin:
        # A one-shot Codex could be held too, but its subject is over in a moment: beside
        # workers that answer at once (scripts, cassettes) its pre-start only competed for the
        # cores (`docs/benchmarks.md`).
        return False
    if not registration.defers_first_prompt:
        return False
    try:
        # Codex's shell reads through its mount namespace; unconfined, it reads anything.
        found = binary(registration.name)
    except HostError:
        return False
    return not isinstance(found, ConfinableReads) or found.reads_confined


class NotStarted(Exception):
    """The pre-start's group, once started, cannot run the variant now: nothing is spawned."""


def reached(received: Callable[[], int]) -> bool:
    """Whether the running subject's host has reached the model (its first request arrived)."""
    return received() > 0


def at_once() -> bool:
    """A pre-start that need not wait for the running subject."""
    return True


def begins(received: Callable[[], int], workers: int) -> Callable[[], bool]:
    """When a pre-start beside a running subject (whose endpoint counts `received`) may begin:
    at once when this run's `workers` leave a start-up slot to spare (a core none of them uses,
    as far as this run knows: the slots are shared with other runs on the machine), else once
    the running subject's host reached the model. Begun at once, it goes ahead even if the
    running subject then never reaches the model; either way its prompt waits for its own run."""
    if 0 < workers < startup.slot_count():
        return at_once
    return functools.partial(reached, received)


class Prestart:
    """One pre-started variant: a thread that waits until it may begin (`begins`: at once, or
    once the running subject reached the model), then prepares and runs the variant's subject
    behind a held gate.

    `eligible` is the endpoint whose mode allowed it (`applies`); `opened_group`, whether the
    pre-start started its group (set as it prepares); `endpoint`, its own once made."""

    def __init__(
        self,
        *,
        variant: str = "candidate",
        directory: Path,
        eligible: Endpoint | None = None,
        may_begin: Callable[[], bool],
        cancelled: Callable[[], bool],
        prepare: Callable[[], PreparedVariant],
        run: Callable[[PreparedVariant, PromptGate], SubjectResult],
    ) -> None:
        self.variant = variant
        self.directory = directory
        self.eligible = eligible
        self.opened_group = False
        self.created = False  # set by `prepare` once it made the variant's directory
        self.endpoint: Endpoint | None = None
        self.gate = PromptGate(held=True)
        self.running_done = threading.Event()
        self.prepared: PreparedVariant | None = None
        self.result: SubjectResult | None = None
        self.error: Exception | None = None
        self._may_begin = may_begin
        self._cancelled = cancelled
        self._prepare = prepare
        self._run = run
        self._thread = threading.Thread(target=self._main, name="prestart", daemon=True)

    def start(self) -> Prestart:
        """Begin waiting for the running subject (then prepare and spawn); returns itself."""
        self._thread.start()
        return self

    def _stopped(self) -> bool:
        return self.gate.aborted or self._cancelled()

    def _main(self) -> None:
        while not self.running_done.is_set():
            if self._stopped():
                return
            try:
                if self._may_begin():
                    break
            except Exception:
                return  # a failing probe never starts anything
            self.running_done.wait(POLL_S)
        else:
            return  # the running subject ended before reaching the model: nothing to overlap
        try:
            prepared = self._prepare()
            self.prepared = prepared
            if self._stopped():
                return
            self.result = self._run(prepared, self.gate)
        except Exception as error:  # kept for the claim, which records it as the run would
            self.error = error

    def received(self) -> int:
        """Requests its own endpoint received (0 before it exists)."""
        endpoint = self.endpoint
        return 0 if endpoint is None or endpoint.received is None else endpoint.received()

    @property
    def spawned(self) -> bool:
        """Whether a host process was spawned (it is reaped before `claim`/`discard` return)."""
        return self.gate.spawned_at is not None

    def claim(self) -> tuple[PreparedVariant, SubjectResult | Exception] | None:
        """Let the candidate's run begin and wait for it: its prepared variant and result (or the
        failure to record as a run's); None when it never prompted its host (nothing kept)."""
        self.gate.open()
        self._thread.join()
        outcome = self.error or self.result
        if self.gate.prompted_at is None or self.prepared is None or outcome is None:
            self._remove()
            return None
        return self.prepared, outcome

    def discard(self) -> None:
        """Call the pre-start off: its host killed and reaped, its directory removed."""
        self.gate.abort()
        self._thread.join()
        if self.gate.prompted_at is not None:
            # Cannot happen while the gate is held (only `claim` opens it): never hide a run.
            raise AssertionError("a pre-started run that began cannot be discarded")
        self._remove()

    @property
    def unused(self) -> bool:
        """Whether it ended without spawning anything (its running subject never reached the
        model first, or its preparation failed): nothing to claim, only to clean up."""
        ended = not self._thread.is_alive() and self._thread.ident is not None
        return ended and self.gate.spawned_at is None

    def _remove(self) -> None:
        """The variant's directory back to not existing, as before any pre-start (only when
        `prepare` created it: a pre-start never removes what it did not make)."""
        if self.created:
            remove(self.directory)


def remove(directory: Path) -> None:
    """`directory` and all in it gone (materialised read-only directories included)."""
    if directory.exists():
        shutil.rmtree(directory, onerror=_writable_and_retry)


def _writable_and_retry(function: Callable[..., Any], path: str, _info: Any) -> None:
    """Materialised resources keep their modes: a read-only directory is made writable."""
    parent = os.path.dirname(path)
    os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, os.stat(path).st_mode | stat.S_IRWXU)
    function(path)
