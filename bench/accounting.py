"""The evaluator's own CPU, accounted per item: a pytest plugin a benchmark loads in a serial run
(`-p bench.accounting`), and the split read from what it wrote.

A difference of two totals (a suite's CPU less a bare host's) moves with the machine's speed
over the minutes between them. This counts each side where it is spent instead:

- the pytest process's own CPU (every thread: the model server, the polls, persisting,
  grading) during each item, and outside items (start-up, collection, the end-of-session
  views);
- every child process it reaps, with its own reaped descendants (`os.wait4`), by what it ran:
  the host's processes, the guardians, anything else the evaluator starts.

It writes one JSON object to the file named by `SKILL_EVAL_BENCH_ACCOUNTING` when the session
ends. Only a serial run (`-n 0`) is accounted: under xdist a worker's reaping is its own.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ENV = "SKILL_EVAL_BENCH_ACCOUNTING"
GUARDIAN = "guardian"
HOST = "host"
# The module whose `Popen` starts every host process (and nothing else).
HOST_SPAWNER = "pytest_skill_eval.hosts.process"

_state: dict[str, Any] = {"items": 0, "in_items": 0.0, "children": {}, "pids": {}}


def _cpu(usage: resource.struct_rusage) -> float:
    return float(usage.ru_utime + usage.ru_stime)


def _kind(args: Any, spawner: str) -> str:
    """What a child ran: the host (spawned by the module that starts hosts), the guardian, else
    its program's file name."""
    if spawner == HOST_SPAWNER:
        return HOST
    argv = [str(part) for part in args] if isinstance(args, (list, tuple)) else [str(args)]
    if any(part.endswith("guardian.py") for part in argv):
        return GUARDIAN
    return Path(argv[0]).name if argv else "?"


def _reaped(pid: int, flags: int) -> tuple[int, int]:
    """`os.waitpid` that notes the reaped child's CPU under its kind."""
    done, status, usage = os.wait4(pid, flags)
    if done:
        kind = _state["pids"].pop(done, "?")
        phase = "in_items" if _state.get("inside") else "outside_items"
        children: dict[str, float] = _state["children"].setdefault(phase, {})
        children[kind] = children.get(kind, 0.0) + _cpu(usage)
    return done, status


def _install() -> None:
    """Make every `subprocess.Popen` reap through `_reaped` (both of its waiting paths)."""
    original_init = subprocess.Popen.__init__

    def init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        spawner = str(sys._getframe(1).f_globals.get("__name__", ""))
        _state["pids"][self.pid] = _kind(kwargs.get("args", args[0] if args else "?"), spawner)

    def try_wait(self: subprocess.Popen[Any], wait_flags: int) -> tuple[int, int]:
        try:
            return _reaped(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]
    subprocess.Popen._try_wait = try_wait  # type: ignore[attr-defined]
    poll = subprocess.Popen._internal_poll  # type: ignore[attr-defined]
    if poll.__defaults__ is None or len(poll.__defaults__) != 4:
        # Another interpreter's `subprocess`: a child reaped by `poll()` would go uncounted.
        raise pytest.UsageError("bench.accounting does not know this Python's subprocess.Popen")
    poll.__defaults__ = (None, _reaped, os.WNOHANG, errno.ECHILD)


def pytest_configure(config: pytest.Config) -> None:
    """Account this process when asked to and not under xdist."""
    if os.environ.get(ENV) and getattr(config, "workerinput", None) is None:
        _install()
        _state["on"] = True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    """Count this process's CPU during the item."""
    before = _cpu(resource.getrusage(resource.RUSAGE_SELF))
    _state["inside"] = True
    yield
    _state["inside"] = False
    _state["in_items"] += _cpu(resource.getrusage(resource.RUSAGE_SELF)) - before
    _state["items"] += 1


def pytest_unconfigure(config: pytest.Config) -> None:
    """Write what was counted."""
    if not _state.get("on"):
        return
    total = _cpu(resource.getrusage(resource.RUSAGE_SELF))
    figures = {
        "items": _state["items"],
        "self_in_items_s": round(_state["in_items"], 3),
        "self_outside_items_s": round(total - _state["in_items"], 3),
        "children_s": {
            phase: {kind: round(cpu, 3) for kind, cpu in sorted(kinds.items())}
            for phase, kinds in sorted(_state["children"].items())
        },
    }
    Path(os.environ[ENV]).write_text(json.dumps(figures), encoding="utf-8")


def read(path: Path) -> dict[str, Any]:
    """What a run accounted."""
    figures: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return figures


def per_subject(figures: dict[str, Any], subjects: int) -> dict[str, float]:
    """A serial run's split per subject: the host's CPU, the evaluator's during the items (its
    own and every other child's), and its CPU outside them (start-up, collection, the views)."""
    inside = figures["children_s"].get("in_items", {})
    outside = figures["children_s"].get("outside_items", {})
    others = sum(cpu for kind, cpu in inside.items() if kind != HOST)
    return {
        "host_cpu_s": round(inside.get(HOST, 0.0) / subjects, 3),
        "evaluator_cpu_s": round((figures["self_in_items_s"] + others) / subjects, 3),
        "evaluator_session_cpu_s": round(
            (figures["self_outside_items_s"] + sum(outside.values())) / subjects, 3
        ),
    }
