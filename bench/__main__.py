"""Run the benchmarks: `python -m bench [NAME ...]` (all of them by default)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from bench import (
    claude_overhead,
    codex_overhead,
    copilot_overhead,
    gemini_overhead,
    imports,
    materialise,
    memory,
    merge,
    opencode_overhead,
    overhead,
    parallel,
    startup,
)

BENCHMARKS: dict[str, Callable[[], dict[str, object]]] = {
    "overhead": overhead.main,
    "claude-overhead": claude_overhead.main,
    "parallel": parallel.main,
    "materialise": materialise.main,
    "memory": memory.main,
    "merge": merge.main,
    "codex-overhead": codex_overhead.main,
    "gemini-overhead": gemini_overhead.main,
    "opencode-overhead": opencode_overhead.main,
    "copilot-overhead": copilot_overhead.main,
    "startup": startup.main,
    "import": imports.main,
}


def main(argv: list[str]) -> int:
    """Run the named benchmarks (all by default), each printing one JSON line."""
    names = argv or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
        return 2
    for name in names:
        BENCHMARKS[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
