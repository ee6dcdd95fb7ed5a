"""The plugin's import CPU in an xdist worker, beside pytest's own, bytecode cached.

Each side is a child Python that imports, and its CPU (user + system) is measured from outside:
`pytest` is what any xdist worker imports whatever its plugins; `worker` adds the plugin and the
modules a worker imports to collect and run an item on Pi (`tests.support.imports`), the common
case and the parallel benchmark's suite: a worker imports another host's implementation only when
it runs a group on that host, and a test checks that a real Pi worker imports none of the plugin's
modules (or its dependencies') that this side leaves out; `controller` adds what the controller
imports once more, at the terminal summary. The plugin's cost per worker is `worker` minus
`pytest`; `disabled` is pytest with the plugin's entry alone, what every pytest run of a project
that installs the plugin pays without `--skill-eval` (its hooks import nothing more then). The
sides alternate so a drift of the machine reaches each alike; every side runs once first so its
bytecode is cached, as in any second run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

from bench.common import children_cpu, emit
from tests.support.imports import PYTEST_WORKER, WORKER_MODULES

CONTROLLER = ("pytest_skill_eval.views.terminal", "pytest_skill_eval.views.summary")
SIDES = {
    "pytest": PYTEST_WORKER,
    "disabled": (*PYTEST_WORKER, "pytest_skill_eval.plugin"),
    "worker": PYTEST_WORKER + WORKER_MODULES,
    "controller": PYTEST_WORKER + WORKER_MODULES + CONTROLLER,
}


def _child_cpu(modules: tuple[str, ...]) -> float:
    """CPU seconds of a child Python that imports `modules` and exits."""
    before = os.times()
    subprocess.run(
        [sys.executable, "-c", "; ".join(f"import {name}" for name in modules)], check=True
    )  # fmt: skip
    return children_cpu(before, os.times())


def import_cpu(runs: int = 9) -> dict[str, float]:
    """Median child CPU of each side over `runs` alternating rounds, and the plugin's share."""
    for modules in SIDES.values():
        _child_cpu(modules)  # compile and cache the bytecode
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    for _ in range(runs):
        for side, modules in SIDES.items():
            cpu[side].append(_child_cpu(modules))
    median = {side: statistics.median(values) for side, values in cpu.items()}
    return {
        "plugin_import_cpu_s": round(median["worker"] - median["pytest"], 3),
        "pytest_import_cpu_s": round(median["pytest"], 3),
        "worker_import_cpu_s": round(median["worker"], 3),
        "controller_views_cpu_s": round(median["controller"] - median["worker"], 3),
        "disabled_import_cpu_s": round(median["disabled"] - median["pytest"], 3),
    }


def main(runs: int = 9) -> dict[str, object]:
    """Print the plugin's import CPU per worker against the 0.30 s bar."""
    return emit("worker-import", **import_cpu(runs), goal_s=0.30, runs=runs)


if __name__ == "__main__":
    main()
