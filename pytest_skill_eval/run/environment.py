"""What a group needs from the process that runs it: the services its subjects use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..budget.ledger import Ledger
from ..definitions import LoadedGroup
from ..hosts.base import Executable
from ..hosts.process import CancelToken
from ..hosts.subject import Endpoint
from ..workspace import SourceResolver
from .prestart import Prestart
from .reuse import Reuse


class NextRun(Protocol):
    """The group this process runs next, as the current group sees it: it may pre-start its
    first subject."""

    def prestart_first(
        self, env: Environment, may_begin: Callable[[], bool], eligible: Endpoint
    ) -> Prestart | None: ...


@dataclass
class Environment:
    """Per-process services a group needs to run its subjects."""

    root: Path
    resolver: SourceResolver
    cancel: CancelToken
    binary: Callable[[str], Executable]  # host name → its checked binary (checked once, lazily)
    # (group, variant, trial, placeholders, the subject's workspace) -> its model endpoint
    endpoint: Callable[[LoadedGroup, str, int, Mapping[str, str], Path], Endpoint]
    no_progress_s: float
    ledger: Ledger | None = None
    # (group, variant, trial) → the inputs that determine its run (`run/inputs.py`)
    inputs: Callable[[LoadedGroup, str, int], dict[str, str]] | None = None
    reuse: Reuse | None = None  # `--skill-eval-reuse`: earlier sealed results to copy runs from
    retries: int = 0  # --skill-eval-retries: runs again of an infrastructure-failed variant
    # The group whose item this process runs next, when that item is its first variant's: its
    # subject may be pre-started while this group's last one waits on the model.
    next_run: NextRun | None = None
    # The evaluator workers of this run (xdist's, 1 when serial): with fewer than the start-up
    # slots, a pre-start need not wait for the running subject to reach the model.
    workers: int = 1
