"""Evaluator overhead per variant vs the bare Pi process on the same scripted 1-turn run."""

from __future__ import annotations

from pathlib import Path

from bench.common import PROMPT, REPLY, bare_pi, item_times, overhead


def _bare_times(runs: int, tmp: Path) -> list[float]:
    return [wall for wall, _ in bare_pi([{"response": REPLY}], PROMPT, runs, tmp)]


def main(groups: int = 10) -> dict[str, object]:
    """Median item wall time minus median bare-Pi wall time, interleaving the two."""
    return overhead(
        "evaluator-overhead",
        "bare_pi_median_s",
        item_times(),
        _bare_times,
        PROMPT,
        REPLY,
        groups,
    )


if __name__ == "__main__":
    main()
