"""Evaluator overhead per variant vs the bare Pi process on the same scripted 1-turn run."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from xml.etree import ElementTree

from bench.common import bare_pi, description_suite, emit, run_suite

PROMPT = "Say done."
REPLY = {"text": "done", "usage": {"input": 500, "output": 5}}


def _item_times(root: Path) -> list[float]:
    junit = root / "junit.xml"
    run_suite(root, f"--junitxml={junit}")
    times = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        if case.get("name", "").endswith(("[baseline]", "[candidate]")) and "::" not in (
            case.get("classname") or ""
        ):
            times.append(float(case.get("time", "0")))
    return times


def _bare_times(runs: int, tmp: Path) -> list[float]:
    return [wall for wall, _ in bare_pi([{"response": REPLY}], PROMPT, runs, tmp)]


def main(groups: int = 10) -> dict[str, object]:
    """Median item wall time minus median bare-Pi wall time, interleaving the two."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "suite"
        description_suite(root, groups, PROMPT, REPLY)
        items = _item_times(root)
        bare = _bare_times(groups * 2, Path(tmp))
    item_median, bare_median = statistics.median(items), statistics.median(bare)
    overhead = item_median - bare_median
    return emit(
        "evaluator-overhead",
        overhead_ms=round(overhead * 1000, 1),
        overhead_ratio=round(overhead / bare_median, 3),
        goal_ms=150,
        goal_ratio=0.15,
        item_median_s=round(item_median, 3),
        bare_pi_median_s=round(bare_median, 3),
        runs=len(items),
    )


if __name__ == "__main__":
    main()
