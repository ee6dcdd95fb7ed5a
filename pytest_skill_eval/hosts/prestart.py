"""A subject's host behind its gate: spawned in a start-up slot, its run begun when it opens.

A host that takes its first prompt over stdin (Pi's rpc mode, opencode's prompt, Claude Code's
stream-json, Codex's app-server) can be spawned
and configured while its counterpart still waits on the model, so its start-up overlaps that
wait. It then holds at its `PromptGate` (the seam's, `hosts.base`), started but never prompted,
until the evaluator opens it (its counterpart's run is on record) or aborts it (the group was
cancelled).
A subject that is not pre-started gets a gate that is open from the start. Either way the run
record says when the process was spawned (`process.spawnedAt`) and when its first prompt went
out (`process.promptedAt`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..evidence.store import redact_under
from . import startup
from .process import CancelToken, HostProcess

if TYPE_CHECKING:
    from .base import Endpoint, Launch, PromptGate


def start_when_free(
    process: HostProcess, gate: PromptGate, received: Callable[[], int] | None, cancel: CancelToken
) -> None:
    """Spawn `process` in a start-up slot (`startup.start_when_free`) and note when.

    A held host frees its slot once it waits at the gate: it never reaches the model before.
    Until its gate opens, nothing waits on it: its start-up gives way to the others.
    """
    startup.start_when_free(
        process,
        gate.ready(received),
        lambda: cancel.cancelled or gate.aborted,
        early=lambda: gate.held,
    )
    gate.spawned()


def gated(launch: Launch, gate: PromptGate | None, group_dir: Path, endpoint: Endpoint) -> Launch:
    """`launch` under `gate` (None: the open gate it has, when not pre-started), its redactor
    covering later writes under `group_dir` and the cassette once the run begins: a held run
    never redacts its counterpart's record, written before."""
    launch = launch if gate is None else dataclasses.replace(launch, gate=gate)
    launch.gate.when_open(redact_under, group_dir, launch.redactor)
    launch.gate.when_open(endpoint.redact_with, launch.redactor)
    return launch
