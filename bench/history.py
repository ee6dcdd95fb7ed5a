"""Reuse, resume and affected-since over 1,000 earlier results against 10 (bar: at most 2×).

Each side is the one-group suite on Pi of `bench gate`, its results directory holding 10, then
1,000, earlier sealed results (byte copies of one real result under earlier ids). Each option
names `latest`, the real result, which every run looks up among the earlier ones and verifies:
`--skill-eval-reuse latest` copies both runs from it, `--skill-eval-affected-since latest`
finds the group unchanged and `--skill-eval-resume latest` carries the finished group over, so
no subject runs and each run is the plugin's own work over the history. The result each run
writes is removed after it, so every run sees the same directory. Each side first runs once
per option untimed (it verifies the named result in full and remembers it:
`evidence/verified.py`); then both sides run in turn `ROUNDS` times per option and the medians
of their wall times are compared.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import emit, run_suite
from bench.gate import LARGE, SMALL, suite_with_history
from pytest_skill_eval.evidence import layout

ROUNDS = 3
OPTIONS = {
    "reuse": ("--skill-eval-reuse", "latest"),
    "affected_since": ("--skill-eval-affected-since", "latest"),
    "resume": ("--skill-eval-resume", "latest"),
}


def _timed(root: Path, option: tuple[str, ...]) -> float:
    """One run with `option`, its own result removed after it; its wall seconds."""
    runs = layout.runs_dir(root)
    before = set(runs.iterdir())
    start = time.perf_counter()
    run_suite(root, *option)
    wall = time.perf_counter() - start
    for written in set(runs.iterdir()) - before:
        shutil.rmtree(written)
    return wall


def main() -> dict[str, object]:
    """Build both histories, run each option once untimed, then time both sides in turn."""
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="bench-history-") as scratch:
        sides = {n: suite_with_history(Path(scratch) / str(n), n) for n in (SMALL, LARGE)}
        for name, option in OPTIONS.items():
            walls: dict[int, list[float]] = {SMALL: [], LARGE: []}
            for root in sides.values():
                _timed(root, option)
            for _ in range(ROUNDS):
                for count, root in sides.items():
                    walls[count].append(_timed(root, option))
            small_s, large_s = statistics.median(walls[SMALL]), statistics.median(walls[LARGE])
            figures[name] = {
                "small_s": round(small_s, 3),
                "large_s": round(large_s, 3),
                "ratio": round(large_s / small_s, 3),
            }
    return emit("history", earlier=[SMALL, LARGE], **figures, bar_ratio=2.0, rounds=ROUNDS)


if __name__ == "__main__":
    main()
