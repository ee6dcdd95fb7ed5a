"""Where a parallel run's time goes: a pytest plugin the parallel benchmark loads in every process
(`-p bench.timeline`), and the phases read from what it noted.

Each process appends one JSON line per event to the file named by `SKILL_EVAL_BENCH_TIMELINE`:
a worker when it has collected and when each item starts and finishes, the controller when it
learns a worker has collected (it also hears of every item's start and finish, which it does
not note: only a worker's own are); each line has the wall clock and the process's own CPU.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ENV = "SKILL_EVAL_BENCH_TIMELINE"
CONTROLLER = "controller"
_process = {"name": CONTROLLER}


def pytest_configure(config: pytest.Config) -> None:
    """Name this process: its xdist worker id, else the controller."""
    worker = getattr(config, "workerinput", None)
    _process["name"] = worker["workerid"] if worker is not None else CONTROLLER


def _note(event: str, **fields: Any) -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    line = {
        "t": time.time(),
        "cpu": time.process_time(),
        "worker": _process["name"],
        "event": event,
        **fields,
    }
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")


def pytest_collection_finish(session: pytest.Session) -> None:
    """A worker has collected (the controller never collects under xdist)."""
    _note("collected")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """The controller has heard that a worker collected."""
    _note("node-collected")


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    """A worker starts an item."""
    if _process["name"] != CONTROLLER:
        _note("start", item=nodeid)


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    """A worker finishes an item."""
    if _process["name"] != CONTROLLER:
        _note("finish", item=nodeid)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, None, None]:
    """The controller's session end: xdist's wait for its workers and every plugin's own end."""
    if _process["name"] == CONTROLLER:
        _note("finishing")
    yield
    if _process["name"] == CONTROLLER:
        _note("finished")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A process has ended its session (every other plugin's unconfigure ran before this)."""
    _note("unconfigured")


def phases(log: Path, began: float, ended: float) -> dict[str, float]:
    """The run's phases, in seconds since it `began` (wall clock), from the noted events.

    `boot_s`: until the last worker had collected; `boot_cpu_s`: the CPU all workers and the
    controller had spent by then; `first_round_s`: until the last worker's first item finished;
    `steady_item_s`: the median wall time of every other item; `tail_s`: from the last item's
    end until the command returned, split three ways: until the last worker had ended its session
    (`tail_workers_s`), then until the controller had (`tail_controller_s`), then until the
    command returned (`tail_exit_s`); `workers_unended`: how many workers never noted the end of
    their session (killed, their wait counted in the controller's part). The controller's part
    is split again where it was noted: `controller_finish_s`, its session end (xdist's wait for
    its workers' processes, every plugin's end of session), and `controller_summary_s`, from
    there to its end (the terminal summary).
    """
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    collected = [e for e in events if e["event"] == "collected"]
    heard = [e for e in events if e["event"] == "node-collected"]
    items: dict[str, list[tuple[float, float]]] = {}
    starts: dict[tuple[str, str], float] = {}
    for event in events:
        key = (event["worker"], event.get("item", ""))
        if event["event"] == "start":
            starts[key] = event["t"]
        elif event["event"] == "finish" and key in starts:
            items.setdefault(event["worker"], []).append((starts[key], event["t"]))
    runs = [sorted(spans) for spans in items.values()]
    later = [end - start for spans in runs for start, end in spans[1:]]
    last = max(end for spans in runs for _, end in spans)
    done = [e for e in events if e["event"] == "unconfigured"]
    # A worker killed before it ended its session noted nothing: its wait is then counted in
    # the controller's part, and `workers_unended` says so.
    unended = {e["worker"] for e in collected} - {e["worker"] for e in done}
    workers_done = max([last, *(e["t"] for e in done if e["worker"] != CONTROLLER)])
    controller_done = max((e["t"] for e in done if e["worker"] == CONTROLLER), default=workers_done)
    return {
        "boot_s": round(max(e["t"] for e in collected) - began, 2),
        "boot_cpu_s": round(sum(e["cpu"] for e in collected) + max(e["cpu"] for e in heard), 2),
        "first_round_s": round(max(spans[0][1] for spans in runs) - began, 2),
        "steady_item_s": round(statistics.median(later), 2) if later else 0.0,
        "tail_s": round(ended - last, 2),
        "tail_workers_s": round(workers_done - last, 2),
        "tail_controller_s": round(controller_done - workers_done, 2),
        "tail_exit_s": round(ended - controller_done, 2),
        "workers_unended": float(len(unended)),
        **_controller_end(events, controller_done),
    }


def _controller_end(events: list[dict[str, Any]], done: float) -> dict[str, float]:
    """The controller's session end and its summary, when both were noted."""
    marks = {e["event"]: e["t"] for e in events if e["worker"] == CONTROLLER}
    if "finishing" not in marks or "finished" not in marks:
        return {}
    return {
        "controller_finish_s": round(marks["finished"] - marks["finishing"], 2),
        "controller_summary_s": round(done - marks["finished"], 2),
    }
