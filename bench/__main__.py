"""Run the benchmarks: `python -m bench [NAME ...] [--groups N]` (all of them by default;
`--groups` sizes the merge benchmark), or `python -m bench hosts [HOST ...] [--rounds N]
[--turns T]` (the hosts benchmark on the named hosts only, in N rounds, 3 unless told, of
subjects of T turns, 1 unless told)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

from bench import (
    claude_overhead,
    codex_overhead,
    copilot_overhead,
    gate,
    gemini_overhead,
    history,
    hosts,
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
    "gate": gate.main,
    "history": history.main,
    "codex-overhead": codex_overhead.main,
    "gemini-overhead": gemini_overhead.main,
    "opencode-overhead": opencode_overhead.main,
    "copilot-overhead": copilot_overhead.main,
    "startup": startup.main,
    "hosts": hosts.main,
    "import": imports.main,
}


def main(argv: list[str]) -> int:
    """Run the named benchmarks (all by default), each printing one JSON line."""
    benchmarks = dict(BENCHMARKS)
    if argv[:1] == ["hosts"]:
        counts = {"rounds": 3, "turns": 1}
        for name, example in (("rounds", 6), ("turns", 3)):
            if f"--{name}" in argv:
                at = argv.index(f"--{name}")
                if at + 1 >= len(argv) or not argv[at + 1].isdecimal() or int(argv[at + 1]) < 1:
                    print(f"--{name} takes a number of {name}, e.g. --{name} {example}")
                    return 2
                counts[name] = int(argv[at + 1])
                argv = [*argv[:at], *argv[at + 2 :]]
        chosen = hosts.selected(argv[1:])
        if isinstance(chosen, str):
            print(chosen)
            return 2
        benchmarks["hosts"] = functools.partial(hosts.main, list(chosen), **counts)
        argv = ["hosts"]
    if "--groups" in argv:
        at = argv.index("--groups")
        if at + 1 >= len(argv) or not argv[at + 1].isdecimal():
            print("--groups takes a number of groups, e.g. --groups 10000")
            return 2
        benchmarks["merge"] = functools.partial(merge.main, int(argv[at + 1]))
        argv = [*argv[:at], *argv[at + 2 :]]
    names = argv or list(benchmarks)
    unknown = [n for n in names if n not in benchmarks]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(benchmarks)}")
        return 2
    for name in names:
        benchmarks[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
