"""Waiting on a run from outside: polling for a condition, finding its live Pi processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

# Generous ceiling so a hung child fails the test instead of the whole session; not a timing check.
WAIT_S = 120.0


def wait_for(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    """Poll until `condition()` is truthy; fail the test (not hang) when it never is."""
    __tracebackhide__ = True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"gave up waiting for {what}")


def dead(pid: int) -> bool:
    """Whether `pid` has exited (gone, or a zombie left for its parent to reap).

    A process killed with SIGKILL dies only once the kernel runs it again, so a test waits for
    this with `wait_for` rather than asking it once.
    """
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


DEATH_S = 30.0  # well short of the 60 s the tests' sleeps would live if nothing killed them


def pi_processes(below: Path) -> list[psutil.Process]:
    """Live processes whose working directory lies under `below` (subjects and their children)."""
    __tracebackhide__ = True
    found = []
    prefix = str(below.resolve())
    for process in psutil.process_iter(["cwd"]):
        cwd = process.info.get("cwd")
        if not cwd or not (cwd == prefix or cwd.startswith(prefix + "/")):
            continue
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


def events_containing(path: Path, event_type: str) -> int:
    """How many `event_type` events a (growing) events.jsonl holds so far."""
    __tracebackhide__ = True
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    return text.count(f'"type":"{event_type}"')
