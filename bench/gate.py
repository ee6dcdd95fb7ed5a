"""A gated run over 1,000 earlier results against one over 10 (bar: at most 2× its time).

Each side is a one-group suite on Pi run with `--skill-eval-fail-on significant-regression`,
whose gate reads every earlier sealed result of its results directory. The earlier results
are byte copies of one real result under other (earlier) ids: each verifies, and each is set
aside as a duplicate once verified, so the gate does all its reading and none of its pooling
changes. Each side first runs once untimed (it verifies every earlier result in full and
remembers what verified: `evidence/verified.py`); then both sides run in turn `ROUNDS` times and
the medians of their wall times are compared. The cold run over 1,000 is printed too.

A third side (`other_*`) holds 1,000 earlier results of which all but 10 are copies of a real
run of the same group under another definition, as a history of edits leaves: the gate reads
their `invocation.json` and verifies none of them (`analysis/gate.py`).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import body_script, body_suite, emit, run_suite
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.evidence.store import new_result_id
from tests.support.roots import VARIANTS, body_group, make_root

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


def _with_other_history(base: Path) -> Path:
    """The suite with `SMALL` earlier results of its own and `LARGE - SMALL` of a real run of
    the same group under another definition (another prompt), as a history of edits leaves."""
    root = suite_with_history(base / "suite", SMALL)
    script = body_script(1, 0)
    other = make_root(
        base / "other",
        [body_group("g00", input={"prompt": "Do another task."}, tools=["read"], expectations=[])],
        {f"g00/{name}": script for name in VARIANTS},
        suite_id="bench",
    )
    run_suite(other)
    (result,) = layout.runs_dir(other).iterdir()
    _history(root, LARGE - SMALL + 1, result)
    return root


def _gated(root: Path) -> float:
    start = time.perf_counter()
    run_suite(root, *GATE)
    return time.perf_counter() - start


def main() -> dict[str, object]:
    """Build both histories, run each once cold, then time both in turn."""
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as scratch:
        sides = {
            "small": suite_with_history(Path(scratch) / "small", SMALL),
            "large": suite_with_history(Path(scratch) / "large", LARGE),
            "other": _with_other_history(Path(scratch) / "other"),
        }
        _gated(sides["small"])
        cold = _gated(sides["large"])
        _gated(sides["other"])
        walls: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(ROUNDS):
            for side, root in sides.items():
                walls[side].append(_gated(root))
    small_s, large_s, other_s = (statistics.median(walls[side]) for side in sides)
    return emit(
        "gate",
        earlier=[SMALL, LARGE],
        small_s=round(small_s, 3),
        large_s=round(large_s, 3),
        ratio=round(large_s / small_s, 3),
        bar_ratio=2.0,
        cold_large_s=round(cold, 3),
        other_large_s=round(other_s, 3),
        other_ratio=round(other_s / small_s, 3),
        rounds=ROUNDS,
    )


if __name__ == "__main__":
    main()
