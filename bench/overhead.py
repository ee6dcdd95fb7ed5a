"""Evaluator overhead per variant vs the bare Pi process on the same scripted 1-turn run."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from bench.common import bare_pi, overhead, run_suite

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
    return overhead(
        "evaluator-overhead",
        "bare_pi_median_s",
        _item_times,
        _bare_times,
        PROMPT,
        REPLY,
        groups,
    )


if __name__ == "__main__":
    main()
