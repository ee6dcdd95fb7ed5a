"""`-n 8` vs `-n 0` on a 16-group suite whose subjects make 3 model calls of 2 s latency."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench.common import body_suite, emit, run_suite


def main(groups: int = 16, calls: int = 3, latency_ms: int = 2000) -> dict[str, object]:
    """Measure both runs side by side and print the speed-up with the CPU floor."""
    with tempfile.TemporaryDirectory() as tmp:
        serial_root = body_suite(Path(tmp) / "serial", groups, calls, latency_ms)
        parallel_root = body_suite(Path(tmp) / "parallel", groups, calls, latency_ms)
        serial_wall, serial_cpu = run_suite(serial_root, "-n", "0")
        parallel_wall, parallel_cpu = run_suite(parallel_root, "-n", "8")
    cores = os.cpu_count() or 1
    subjects = groups * 2
    return emit(
        "parallel-speedup",
        speedup=round(serial_wall / parallel_wall, 2),
        goal=5.0,
        serial_wall_s=round(serial_wall, 2),
        parallel_wall_s=round(parallel_wall, 2),
        parallel_cpu_s=round(parallel_cpu, 2),
        cpu_floor_s=round(parallel_cpu / cores, 2),
        latency_floor_s=round(subjects * calls * latency_ms / 1000 / 8, 2),
        cores=cores,
        subjects=subjects,
        serial_cpu_s=round(serial_cpu, 2),
    )


if __name__ == "__main__":
    main()
