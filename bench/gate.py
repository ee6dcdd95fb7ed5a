"""A gated run over 1,000 earlier results against one over 10 (bar: at most 2× its time).

Each side is a one-group suite on Pi run with `--skill-eval-fail-on significant-regression`,
whose gate reads every earlier sealed result of its results directory. The earlier results
are byte copies of one real result under other (earlier) ids: each verifies, and each is set
aside as a duplicate once verified, so the gate does all its reading and none of its pooling
changes. Each side first runs once untimed (it verifies every earlier result in full and
remembers what verified: `evidence/verified.py`); then both sides run in turn `ROUNDS` times and
the medians of their wall times are compared. The cold run over 1,000 is printed too.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import body_suite, emit, run_suite
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.evidence.store import new_result_id

SMALL, LARGE = 10, 1000
ROUNDS = 3
GATE = ("--skill-eval-fail-on", "significant-regression")


def _history(root: Path, count: int, first: Path) -> None:
    """`count - 1` copies of the result `first` beside it, under ids of earlier seconds."""
    start = datetime(2020, 1, 1, tzinfo=UTC)
    for k in range(count - 1):
        identity = new_result_id(start + timedelta(seconds=k))
        shutil.copytree(first, layout.runs_dir(root) / identity, symlinks=True)


def suite_with_history(base: Path, count: int) -> Path:
    """A one-group suite whose results directory holds `count` earlier sealed results."""
    root = body_suite(base, 1, 1, 0)
    run_suite(root)
    (first,) = layout.runs_dir(root).iterdir()
    _history(root, count, first)
    return root


def _gated(root: Path) -> float:
    start = time.perf_counter()
    run_suite(root, *GATE)
    return time.perf_counter() - start


def main() -> dict[str, object]:
    """Build both histories, run each once cold, then time both in turn."""
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as scratch:
        small = suite_with_history(Path(scratch) / "small", SMALL)
        large = suite_with_history(Path(scratch) / "large", LARGE)
        _gated(small)
        cold = _gated(large)
        walls: dict[int, list[float]] = {SMALL: [], LARGE: []}
        for _ in range(ROUNDS):
            walls[SMALL].append(_gated(small))
            walls[LARGE].append(_gated(large))
    small_s, large_s = statistics.median(walls[SMALL]), statistics.median(walls[LARGE])
    return emit(
        "gate",
        earlier=[SMALL, LARGE],
        small_s=round(small_s, 3),
        large_s=round(large_s, 3),
        ratio=round(large_s / small_s, 3),
        bar_ratio=2.0,
        cold_large_s=round(cold, 3),
        rounds=ROUNDS,
    )


if __name__ == "__main__":
    main()
