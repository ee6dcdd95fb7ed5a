"""`-n 8` vs `-n 0` on a 16-group suite whose subjects make 3 model calls of 2 s latency.

Besides the speed-up it prints what one subject of the serial run costs, each side counted where
it is spent (`bench/accounting.py`): the host's processes, and the evaluator's CPU during the
item (the pytest process's own: materialising, hashing, the model server, persisting, grading;
and the guardian it starts), with the session's own start and end over the subjects beside it;
a bare Pi running the same conversation, before and after the serial run, is the cross-check
of the host's figure. Then how close the parallel wall time comes to its floor: the larger of
the CPU floor (all CPU over the cores) and the latency floor (every subject's model waits over
the workers).
Then where the parallel run's time went (`bench/timeline.py`): booting until every worker has
collected, the first round, the later items, the tail. Booting and every worker's first host
start are CPU that must all be spent before the last worker can begin its first model wait
(xdist hands out no work before every worker has collected), and every worker then waits out
its share of the latency floor (two groups of 12 s of model waits each; any other split leaves
some worker 36 s): the run cannot end before the latency floor plus that front CPU over the
cores. The efficiency that leaves (`efficiency_cap`) is printed beside the measured one. It is
optimistic: a host start counts as a bare Pi's CPU until it first asks the model, and none of
the evaluator's work for a subject is counted, nor the host's own between its model calls.
A second cap counts that last part too (`efficiency_cap_with_host_run`): each worker's subjects
run one after another, and each one's host works after its prompt and after every reply before
its process ends, which no evaluator can overlap with the same subject's waits. It is taken
from the bare Pi of the same run (`per_subject.host_run_s`: each whole conversation's wall less
the moment it first asked the model and less the model waits), the host alone, none of the
evaluator.
Last, the plugin's import CPU per xdist worker beside pytest's own (`bench import`): each of the
eight workers pays it.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from bench import accounting, timeline
from bench.common import REPO, bare_pi, bare_scratch, body_script, body_suite, emit, run_suite
from bench.imports import import_cpu

WORKERS = 8


def main(groups: int = 16, calls: int = 3, latency_ms: int = 2000) -> dict[str, object]:
    """Measure both runs side by side and print the speed-up with the floor and the CPU split."""
    conversation = body_script(calls, latency_ms)
    with tempfile.TemporaryDirectory() as tmp, bare_scratch() as homes:
        serial_root = body_suite(Path(tmp) / "serial", groups, calls, latency_ms)
        parallel_root = body_suite(Path(tmp) / "parallel", groups, calls, latency_ms)
        # The bare Pi the serial run's CPU is set against runs right before it and right after
        # it, so a drift of the machine's speed during the run reaches both sides alike.
        firsts: list[float] = []  # when each bare Pi first asked the model
        bare = bare_pi(
            conversation, "Do the task.", 3, Path(homes) / "before", fixture=True, firsts=firsts
        )
        counted = Path(tmp) / "accounting.json"
        accounted = {**os.environ, accounting.ENV: str(counted), "PYTHONPATH": str(REPO)}
        serial_wall, serial_cpu = run_suite(
            serial_root, "-p", "bench.accounting", "-n", "0", env=accounted
        )
        split = accounting.read(counted)
        bare += bare_pi(
            conversation, "Do the task.", 3, Path(homes) / "after", fixture=True, firsts=firsts
        )
        log = Path(tmp) / "timeline.jsonl"
        noting = {**os.environ, timeline.ENV: str(log), "PYTHONPATH": str(REPO)}
        began = time.time()
        parallel_wall, parallel_cpu = run_suite(
            parallel_root, "-p", "bench.timeline", "-n", str(WORKERS), env=noting
        )
        phases = timeline.phases(log, began, time.time())
        starts = bare_pi(
            body_script(1, 0), "Do the task.", 4, Path(homes) / "start", fixture=True,
            to_first_request=True,
        )  # fmt: skip
    imports = import_cpu(runs=5)
    cores = len(os.sched_getaffinity(0))
    subjects = groups * 2
    bare_cpu = statistics.median(cpu for _, cpu in bare)
    per_subject = accounting.per_subject(split, subjects)
    cpu_floor = parallel_cpu / cores
    latency_floor = subjects * calls * latency_ms / 1000 / WORKERS
    floor = max(cpu_floor, latency_floor)
    host_start_cpu = statistics.median(cpu for _, cpu in starts)
    front_cpu = phases["boot_cpu_s"] + WORKERS * host_start_cpu
    host_run = host_run_s(bare, firsts, calls * latency_ms / 1000)
    cap, cap_with_host_run = efficiency_caps(
        floor, latency_floor, front_cpu / cores, subjects / WORKERS * host_run
    )
    return emit(
        "parallel-speedup",
        speedup=round(serial_wall / parallel_wall, 2),
        goal=6.0,
        serial_wall_s=round(serial_wall, 2),
        parallel_wall_s=round(parallel_wall, 2),
        floor_s=round(floor, 2),
        efficiency=round(floor / parallel_wall, 3),
        cpu_floor_s=round(cpu_floor, 2),
        latency_floor_s=round(latency_floor, 2),
        phases=phases,
        front_cpu_s=round(front_cpu, 2),
        efficiency_cap=round(cap, 3),
        # How much of what the machine allows the run reached (the bar: 0.95 of the cap).
        of_cap=round(floor / parallel_wall / cap, 3),
        of_cap_goal=0.95,
        # The same, against the cap that also counts the host's own work between its calls.
        efficiency_cap_with_host_run=round(cap_with_host_run, 3),
        of_cap_with_host_run=round(floor / parallel_wall / cap_with_host_run, 3),
        per_subject={
            **per_subject,
            "evaluator_goal_s": 0.10,
            "bare_host_cpu_s": round(bare_cpu, 3),
            "bare_host_cpu_runs_s": [round(cpu, 3) for _, cpu in bare],
            "host_start_cpu_s": round(host_start_cpu, 3),
            "host_run_s": round(host_run, 3),
            "bare_host_wall_s": round(statistics.median(wall for wall, _ in bare), 3),
            "serial_wall_s": round(serial_wall / subjects, 3),
        },
        worker_import={**imports, "goal_s": 0.30},
        parallel_cpu_s=round(parallel_cpu, 2),
        serial_cpu_s=round(serial_cpu, 2),
        serial_split=split,
        cores=cores,
        subjects=subjects,
    )


def host_run_s(
    conversations: list[tuple[float, float]], firsts: list[float], waits_s: float
) -> float:
    """A bare host's own work in one subject after its start: the median, over whole
    `conversations` ((wall, CPU) each), of its wall less the wall at which it first asked the
    model (`firsts`, in the same order) and less the `waits_s` of model waits; never below
    zero."""
    runs = [wall - first - waits_s for (wall, _), first in zip(conversations, firsts, strict=True)]
    return max(0.0, statistics.median(runs))


def efficiency_caps(
    floor: float, latency_floor: float, front_s: float, host_run_per_worker: float
) -> tuple[float, float]:
    """(the cap, the cap with the host's own run): `floor` over the least wall any schedule
    has, the latency floor after the front CPU over the cores (`front_s`), then with every
    worker's subjects' own host work after their starts (`host_run_per_worker`) on top."""
    least = latency_floor + front_s
    return floor / least, floor / (least + host_run_per_worker)


if __name__ == "__main__":
    main()
