"""An environment whose runs are cancelled before any subject starts: finished results
without a host."""

from __future__ import annotations

from pathlib import Path

from pytest_skill_eval.hosts.process import CancelToken
from pytest_skill_eval.run import Environment
from pytest_skill_eval.workspace import SourceResolver


def _no_subject(*_: object) -> object:
    raise AssertionError("a cancelled group never starts a subject")


def cancelled_environment(root: Path) -> Environment:
    """An environment for the definition root `root` whose every run is cancelled."""
    cancel = CancelToken()
    cancel.cancel("cancelled")
    return Environment(
        root=root,
        resolver=SourceResolver(root),
        cancel=cancel,
        binary=_no_subject,  # type: ignore[arg-type]
        endpoint=_no_subject,  # type: ignore[arg-type]
        no_progress_s=600,
    )
