"""Each host's subject under the plugin against its stock CLI's start, side by side in one run.

`python -m bench hosts [HOST ...]` (every registered host by default) prints one JSON line per
host:

- `plugin`: one subject of a one-turn description group (the overhead benchmarks' `PROMPT`
  answered by `REPLY`) as the plugin runs it; with `--turns N`, of a body group of N turns,
  each that prompt answered by that reply (Pi, Claude Code and Codex hold one process for all
  of a subject's turns, the other hosts start one per turn). `wall_s` is the median JUnit item
  time. `cpu_s` is the marginal CPU of a subject: each round runs a suite of `groups` groups
  and one of twice as many, and the difference of their children's CPU (pytest, the plugin,
  every host process it waited for) over the extra subjects is what one more subject costs, the
  session's own start-up and teardown cancelling out. `suite_wall_s` is the marginal wall of a
  subject, the same difference of the two suites' wall times: what a serial run takes longer
  for one more subject, all of the evaluator's work between items included, and whatever of a
  subject's start a pre-start moved into the item before it.
- `fresh`: the host's stock CLI (`bench.stock`: its packaged command, only the least
  configuration that reaches the loopback model) in a new empty home per run; CPU and wall to
  exit. With `--turns N`, a run is N processes in that home, each later one continuing the
  session as a user would (`bench.stock.CONTINUE`: `--continue`, `resume --last`, `--resume
  latest`), their CPU and wall added up; a run whose later requests do not carry the earlier
  prompts stops the benchmark.
- `warm`: the same command with one home reused, after one untimed first run.
- `ratio_fresh` / `ratio_warm`: plugin over fresh / over warm, CPU, wall and suite wall (both
  against the stock wall); `goal` the bar the plugin's one-turn subject must meet against the
  fresh start (0.5 for Gemini CLI and opencode; none for more turns).
- `spread_fresh`: where the fresh ratio lies given the rounds' own scatter (the 5th and 95th
  percentiles over resamplings of whole rounds, with a fixed seed), and `goal_met`: true when
  all of it is at or under the goal, false when all of it is over, null when the goal lies
  inside it or there were fewer than `MIN_ROUNDS` rounds (the runs cannot tell).

Stock hosts try the network (updates, telemetry, model lists, installs), so the whole
benchmark, both sides, runs in a network namespace with only loopback (`unshare -rn`): the
module starts itself again inside one (`network` in every line says so), and refuses where
none can be made. Rounds interleave the hosts and sides, so a drift of the machine reaches all
of them alike.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    PROMPT,
    REPLY,
    bare_runs,
    bare_scratch,
    children_cpu,
    conversation_suite,
    description_suite,
    emit,
    item_times,
)
from bench.stock import STOCK, continuing
from tests.support.namespaces import loopback_only, loopback_only_available

HOSTS = tuple(STOCK)
GOALS = {"gemini-cli": 0.5, "opencode": 0.5}
# More pytest arguments a host's suites need here (Codex cannot confine reads in the namespace).
EXTRA = {"codex": ("--skill-eval-codex-unconfined-reads",)}
MARKER = "SKILL_EVAL_BENCH_LOOPBACK_ONLY"
NETWORK = "loopback only (unshare -rn)"


def selected(names: list[str]) -> tuple[str, ...] | str:
    """The hosts named (all when none), or the one line refusing an unknown name."""
    unknown = [name for name in names if name not in HOSTS]
    if unknown:
        return f"unknown host(s): {', '.join(unknown)}; choose from {', '.join(HOSTS)}"
    return tuple(names) or HOSTS


def main(
    names: list[str] | None = None, groups: int = 2, rounds: int = 3, turns: int = 1
) -> dict[str, object]:
    """Compare each selected host's plugin subject of `turns` turns with its stock starts (in
    the loopback-only namespace, entered first when not yet in it)."""
    hosts = selected(names or [])
    if isinstance(hosts, str):
        raise SystemExit(hosts)
    if os.environ.get(MARKER) != "1":
        return _inside_namespace(hosts, rounds, turns)
    return _compare(hosts, groups, rounds, turns)


def _inside_namespace(hosts: tuple[str, ...], rounds: int, turns: int) -> dict[str, object]:
    """Run this benchmark again inside a new network namespace with only loopback."""
    if not loopback_only_available():
        raise SystemExit(
            "bench hosts runs only in a network namespace with only loopback, which this machine "
            "cannot make: it needs `unshare -rn` (util-linux, user namespaces) and `ip` (iproute2)"
        )
    argv = [sys.executable, "-m", "bench", "hosts", *hosts, "--rounds", str(rounds)]
    argv += ["--turns", str(turns)]
    done = subprocess.run(loopback_only(argv), env={**os.environ, MARKER: "1"})
    if done.returncode != 0:
        raise SystemExit(f"bench hosts failed in its loopback-only namespace ({done.returncode})")
    return {"benchmark": "hosts", "hosts": list(hosts)}


RESAMPLES = 2000
SEED = 43


# Fewer rounds than this give too few distinct resamplings for the spread to say anything.
MIN_ROUNDS = 4


@dataclass
class Round:
    """What one round measured for one host: its marginal CPU per subject, its items' times,
    its fresh starts' (wall, CPU) and its marginal wall per subject."""

    cpu_s: float
    items: list[float]
    fresh: list[tuple[float, float]]
    suite_wall_s: float


def spread(rounds: list[Round]) -> dict[str, list[float]]:
    """The 5th and 95th percentiles of plugin over fresh, CPU and wall, over resamplings of the
    rounds (with replacement, a fixed seed; a round's figures stay together, as they were taken
    on the machine as it was then): the mean of their CPU per subject over the median of their
    fresh starts' CPU, the median of their items' times over that of their fresh starts', and
    the mean of their marginal wall per subject over that too."""
    draw = random.Random(SEED)
    ratios: dict[str, list[float]] = {"cpu": [], "wall": [], "suite_wall": []}
    for _ in range(RESAMPLES):
        chosen = draw.choices(rounds, k=len(rounds))
        fresh = [run for one in chosen for run in one.fresh]
        cpu = statistics.mean(one.cpu_s for one in chosen)
        wall = statistics.median(time for one in chosen for time in one.items)
        ratios["cpu"].append(cpu / statistics.median(c for _, c in fresh))
        ratios["wall"].append(wall / statistics.median(w for w, _ in fresh))
        suite = statistics.mean(one.suite_wall_s for one in chosen)
        ratios["suite_wall"].append(suite / statistics.median(w for w, _ in fresh))
    return {
        key: [_percentile(sorted(values), q) for q in (0.05, 0.95)]
        for key, values in ratios.items()
    }


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def goal_met(bounds: dict[str, list[float]], goal: float | None, rounds: int) -> bool | None:
    """True when every spread lies at or under `goal`, False when one lies wholly over it,
    None when the goal lies inside one, there is no goal, or too few rounds to tell."""
    if goal is None or rounds < MIN_ROUNDS:
        return None
    if any(low > goal for low, _ in bounds.values()):
        return False
    if all(high <= goal for _, high in bounds.values()):
        return True
    return None


def _compare(hosts: tuple[str, ...], groups: int, rounds: int, turns: int) -> dict[str, object]:
    """Run the rounds and print each host's line."""
    figures = {host: Figures(turns) for host in hosts}
    with tempfile.TemporaryDirectory() as tmp, bare_scratch() as homes:
        for k in range(rounds):
            for host in hosts:
                _round(host, figures[host], Path(tmp) / f"{host}{k}", Path(homes) / host, groups)
    for host in hosts:
        _line(host, figures[host])
    return {"benchmark": "hosts", "hosts": list(hosts)}


@dataclass
class Figures:
    """What the rounds measured for one host, and its warm starts (one home, every round), for
    subjects of `turns` turns."""

    turns: int = 1
    rounds: list[Round] = field(default_factory=list)
    warm: list[tuple[float, float]] = field(default_factory=list)

    @property
    def items(self) -> list[float]:
        return [time for one in self.rounds for time in one.items]

    @property
    def fresh(self) -> list[tuple[float, float]]:
        return [run for one in self.rounds for run in one.fresh]


def _round(host: str, into: Figures, tmp: Path, homes: Path, groups: int) -> None:
    """One round of one host: a suite of `groups` groups, fresh starts, a suite of twice as
    many, warm starts (the warm home kept in `homes/warm` from round to round)."""
    times = item_times(host, *EXTRA.get(host, ()), prestart=True)
    cpu: list[float] = []
    walls: list[float] = []
    items: list[float] = []
    fresh: list[tuple[float, float]] = []
    for size, side in ((groups, "fresh"), (groups * 2, "warm")):
        if into.turns == 1:
            root = description_suite(tmp / f"suite{size}", size, PROMPT, REPLY)
        else:
            root = conversation_suite(tmp / f"suite{size}", size, [PROMPT] * into.turns, REPLY)
        before, started = os.times(), time.perf_counter()
        items += times(root)
        after = os.times()
        walls.append(time.perf_counter() - started)
        cpu.append(children_cpu(before, after))
        directory = homes / (side if side == "warm" else f"fresh{len(into.rounds)}")
        directory.mkdir(parents=True, exist_ok=True)
        again = continuing(host) if into.turns > 1 else None
        replies = [{"response": REPLY}] * into.turns
        runs = bare_runs(replies, 2, directory, STOCK[host], reuse=side == "warm", again=again)
        if side == "fresh":
            fresh = runs
        else:
            into.warm += runs
    # The second suite's `groups` extra groups are 2 x `groups` extra subjects.
    extra = 2 * groups
    into.rounds.append(
        Round((cpu[1] - cpu[0]) / extra, items, fresh, (walls[1] - walls[0]) / extra)
    )


def _line(host: str, figures: Figures) -> dict[str, Any]:
    """Print one host's JSON line."""
    plugin = {
        "cpu_s": round(statistics.mean(one.cpu_s for one in figures.rounds), 3),
        "wall_s": round(statistics.median(figures.items), 3),
        "suite_wall_s": round(statistics.mean(one.suite_wall_s for one in figures.rounds), 3),
    }
    sides = {"fresh": _median(figures.fresh), "warm": _median(figures.warm)}
    bounds = spread(figures.rounds)
    goal = GOALS.get(host) if figures.turns == 1 else None
    ratios = {
        f"ratio_{side}": {
            key: round(plugin[f"{key}_s"] / value[against], 3)
            for key, against in STOCK_SIDE.items()
        }
        for side, value in sides.items()
    }
    return emit(
        "hosts",
        host=host,
        turns=figures.turns,
        plugin=plugin,
        **sides,
        **ratios,
        spread_fresh={key: [round(bound, 3) for bound in pair] for key, pair in bounds.items()},
        goal=goal,
        goal_met=goal_met(bounds, goal, len(figures.rounds)),
        subjects=len(figures.items),
        bare_runs=len(figures.fresh),
        network=NETWORK,
    )


# Each figure of the plugin's subject, and the stock start's figure it is set against.
STOCK_SIDE = {"cpu": "cpu_s", "wall": "wall_s", "suite_wall": "wall_s"}


def _median(runs: list[tuple[float, float]]) -> dict[str, float]:
    """Median CPU and wall of bare runs."""
    return {
        "cpu_s": round(statistics.median(cpu for _, cpu in runs), 3),
        "wall_s": round(statistics.median(wall for wall, _ in runs), 3),
    }
