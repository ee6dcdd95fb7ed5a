"""Helpers shared by the benchmarks: suites on disk, running pytest, printing one JSON line.

Suites are built with the tests' own definition-root builders (`tests.support`), so a change to
the definition format is made once for tests and benchmarks alike.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from pytest_skill_eval.hosts.settling import cpu_seconds
from pytest_skill_eval.nodeids import DEFAULT_HOST
from pytest_skill_eval.run.prestart import ENV as PRESTART_ENV
from tests.support.bytecode import cache_bytecode_outside_the_tree
from tests.support.paths import PI, REPO
from tests.support.roots import VARIANTS, Group, body_group, build, make_root, variant
from tests.support.runs import skill_eval_args

# The pytest sessions timed here cache bytecode as an ordinary Python does.
cache_bytecode_outside_the_tree()

__all__ = [
    "PI",
    "PROMPT",
    "REPLY",
    "REPO",
    "BareCommand",
    "bare_home",
    "bare_pi",
    "bare_runs",
    "body_suite",
    "conversation_suite",
    "description_suite",
    "emit",
    "item_times",
    "one_turn_overhead",
    "overhead",
    "run_suite",
]


# The one-turn run every overhead benchmark times, on both of its sides.
PROMPT = "Say done."
REPLY = {"text": "done", "usage": {"input": 500, "output": 5}}


def item_times(
    host: str | None = None, *extra: str, prestart: bool = False
) -> Callable[[Path], list[float]]:
    """What times a suite's variant items: each one's JUnit time in a run of the suite (on
    `host`, chosen by the invocation, when given; `extra`: more pytest arguments). Without
    `prestart` the run has pre-start off: a pre-started item's host began loading during the
    item before it, so its own time would leave out part of what it cost."""

    def times(root: Path) -> list[float]:
        junit = root / "junit.xml"
        chosen = ("--skill-eval-host", host) if host else ()
        env = None if prestart else {**os.environ, PRESTART_ENV: "0"}
        run_suite(root, f"--junitxml={junit}", *chosen, *extra, env=env)
        at = f"@{host}]" if host and host != DEFAULT_HOST else "]"
        return [
            float(case.get("time", "0"))
            for case in ElementTree.parse(junit).getroot().iter("testcase")
            # Sub-results are rows of their own, their item's node id in their class name.
            if case.get("name", "").endswith((f"[baseline{at}", f"[candidate{at}"))
            and "::" not in (case.get("classname") or "")
        ]

    return times


def emit(name: str, **figures: Any) -> dict[str, Any]:
    """Print one benchmark result as a JSON line and return it."""
    line = {"benchmark": name, **figures}
    print(json.dumps(line), flush=True)
    return line


def body_script(calls: int, latency_ms: int) -> list[dict[str, Any]]:
    """`calls - 1` reads of README.md, then "done", each after `latency_ms`."""
    reads = [
        {
            "response": {
                "tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}],
                "latency_ms": latency_ms,
            }
        }
        for _ in range(calls - 1)
    ]
    return [*reads, {"response": {"text": "done", "latency_ms": latency_ms}}]


def body_suite(root: Path, groups: int, calls: int, latency_ms: int) -> Path:
    """A suite of `groups` body groups whose subjects each make `calls` model calls."""
    ids = [f"g{index:02d}" for index in range(groups)]
    definitions = [
        body_group(group_id, input={"prompt": "Do the task."}, tools=["read"], expectations=[])
        for group_id in ids
    ]
    script = body_script(calls, latency_ms)
    scripts = {f"{group_id}/{name}": script for group_id in ids for name in VARIANTS}
    return make_root(root, definitions, scripts, suite_id="bench")


def description_suite(root: Path, groups: int, prompt: str, reply: dict[str, Any]) -> Path:
    """A suite of `groups` description groups, no skills, each variant answering `reply` once."""
    build(
        root,
        [
            Group(
                id=f"g{index:02d}",
                type="description",
                turns=[prompt],
                tools=["read"],
                candidate=variant(),
                scripts={name: [reply] for name in VARIANTS},
            )
            for index in range(groups)
        ],
        suite_id="overhead",
    )
    return root


def conversation_suite(root: Path, groups: int, turns: list[str], reply: dict[str, Any]) -> Path:
    """A suite of `groups` body groups of `turns`, no skills, an empty workspace, each turn of
    each variant answered by `reply`."""
    build(
        root,
        [
            Group(
                id=f"g{index:02d}",
                turns=turns,
                tools=["read"],
                candidate=variant(),
                fixture=None,
                scripts={name: [reply] * len(turns) for name in VARIANTS},
            )
            for index in range(groups)
        ],
        suite_id="conversations",
    )
    return root


def children_cpu(before: os.times_result, after: os.times_result) -> float:
    """CPU seconds (user + system) this process's waited-for children spent between `before`
    and `after` (`os.times()` each)."""
    return (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def run_suite(root: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run the suite through pytest (in `env`, else this process's environment); returns
    (wall seconds, CPU seconds of all children).

    The session gets a base temporary directory of its own (`--basetemp`, beside the suite).
    Without one, an xdist session numbers a new one under pytest's shared temporary root and,
    as it ends, deletes the older ones it keeps no longer: the first `-n 8` run after the test
    suite spent 12.8 s of its tail removing that run's directories."""
    basetemp = root.parent / f".basetemp-{root.name}"
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "--rootdir",
            str(root),
            "-c",
            os.devnull,
            "--basetemp",
            str(basetemp),
            *skill_eval_args(root, *extra),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"benchmark suite failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    cpu = children_cpu(before, after)
    return wall, cpu


def bare_scratch() -> tempfile.TemporaryDirectory[str]:
    """A scratch directory for bare host runs, where `isolated_home` makes the evaluator's homes
    (a home on disk or in memory changes a host's own time: both sides get the same)."""
    from pytest_skill_eval.hosts.launch import home_parent

    return tempfile.TemporaryDirectory(dir=home_parent())


# Sets up one bare run's directory (`base/work` is its cwd) for its route; argv and env.
BareCommand = Callable[[Any, Path], tuple[list[str], dict[str, str]]]


def bare_runs(
    interactions: list[dict[str, Any]],
    runs: int,
    tmp: Path,
    command: BareCommand,
    *,
    to_first_request: bool = False,
    reuse: bool = False,
    again: Callable[[list[str]], list[str]] | None = None,
    firsts: list[float] | None = None,
) -> list[tuple[float, float]]:
    """(wall s, CPU s) of `runs` bare host processes, each against its own scripted route in
    its own `tmp/bare<k>`: the host alone, none of the evaluator. With `to_first_request`, both
    are taken when the route is first asked for a reply: the host's start-up alone. With
    `firsts` (not with `again`), each whole run also appends there the wall time at which its
    route was first asked (within a few milliseconds). With `reuse`, every run is in
    `tmp/bare0` (`command` must set it up again without harm), after one untimed run there: the
    host's warm start.

    With `again` (the argv that continues the session the argv it is given started), a run is a
    conversation of one process per interaction: the first `command`'s, each later one
    `again`'s in the same home, timed together; every later request must carry the prompts
    before it (the session was continued, not begun anew)."""
    from pytest_skill_eval.modelserver.scriptparse import parse_script
    from pytest_skill_eval.modelserver.server import ScriptedModelServer

    figures = []
    script = parse_script({"version": 1, "interactions": interactions})
    turns = len(interactions) if again is not None else 1
    with ScriptedModelServer() as server:
        for index in range(-1 if reuse else 0, runs):
            route = server.open_route(script)
            base = tmp / f"bare{0 if reuse else index}"
            (base / "work").mkdir(parents=True, exist_ok=reuse)
            argv, env = command(route, base)
            if to_first_request and index >= 0:
                timed = _to_first_request(argv, base / "work", env, route)
            elif firsts is not None and again is None and index >= 0:
                wall, cpu, first = _to_exit_noting_first(argv, base / "work", env, route)
                timed = (wall, cpu)
                firsts.append(first)
            else:  # a warm home's untimed first run goes to the end
                steps = [argv] + [again(argv) for _ in range(turns - 1)] if again else [argv]
                each = [_to_exit(step, base / "work", env) for step in steps]
                timed = (sum(wall for wall, _ in each), sum(cpu for _, cpu in each))
                if again is not None:
                    _continued(route, PROMPT, turns)  # every stock command's prompt
            if index >= 0:
                figures.append(timed)
            route.close()
    return figures


def _continued(route: Any, prompt: str, turns: int) -> None:
    """Each of the route's `turns` requests carried every prompt before it and its own."""
    sent = [json.dumps(request.body).count(json.dumps(prompt)[1:-1]) for request in route.requests]
    if len(sent) != turns or any(count < at for at, count in enumerate(sent, start=1)):
        raise SystemExit(f"a stock run did not continue its session: prompts seen {sent}")


def _to_exit(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of a host process from its spawn until it exits (it must succeed)."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True
    )  # fmt: skip
    wall = time.perf_counter() - start
    after = os.times()
    cpu = children_cpu(before, after)
    return wall, cpu


def _to_exit_noting_first(
    argv: list[str], cwd: Path, env: dict[str, str], route: Any
) -> tuple[float, float, float]:
    """(wall s, CPU s, wall s at the route's first request) of a host process from its spawn
    until it exits (it must succeed); the first request is looked for every 5 ms until then."""
    before = os.times()
    start = time.perf_counter()
    first: float | None = None
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ) as child:  # fmt: skip
        while first is None and child.poll() is None:
            if route.consumed > 0:
                first = time.perf_counter() - start
            time.sleep(0.005)
        child.wait()  # its exit, noticed as it happens
    wall = time.perf_counter() - start
    after = os.times()
    if child.returncode != 0 or first is None:
        raise SystemExit(f"{argv[0]} exited with {child.returncode} (asked the model: {first})")
    cpu = children_cpu(before, after)
    return wall, cpu, first


def bare_home(base: Path, config: str = "", *, path: str | None = None) -> dict[str, str]:
    """Make a bare run's empty `base/home` (its host's config directory `config` inside) and
    `base/tmp`; return the environment pointing the host at them, on `path` (else this process's
    PATH): each bare host starts as isolated as an item's, so only the evaluator differs."""
    (base / "home" / config).mkdir(parents=True)
    (base / "tmp").mkdir()
    return {
        "PATH": path or os.environ.get("PATH", os.defpath),
        "HOME": str(base / "home"),
        "TMPDIR": str(base / "tmp"),
    }


def _bare_walls(command: BareCommand) -> Callable[[int, Path], list[float]]:
    """What times bare runs of `command` on the overheads' one turn (`REPLY`): their walls."""

    def walls(runs: int, tmp: Path) -> list[float]:
        return [wall for wall, _ in bare_runs([{"response": REPLY}], runs, tmp, command)]

    return walls


def _to_first_request(
    argv: list[str], cwd: Path, env: dict[str, str], route: Any
) -> tuple[float, float]:
    """(wall s, CPU s) of a host process from its spawn until its route is first asked for a
    reply; its CPU is read from the kernel's account of it then (`/proc/PID/stat`)."""
    start = time.perf_counter()
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ) as child:  # fmt: skip
        while route.consumed == 0:
            if child.poll() is not None:
                raise SystemExit(f"{argv[0]} exited before the model answered it")
            time.sleep(0.002)
        wall = time.perf_counter() - start
        cpu = cpu_seconds(child.pid)
        child.kill()
    if cpu is None:
        raise SystemExit(f"{argv[0]}'s CPU could not be read from /proc")
    return wall, cpu


def bare_pi(
    interactions: list[dict[str, Any]],
    prompt: str,
    runs: int,
    tmp: Path,
    *,
    fixture: bool = False,
    to_first_request: bool = False,
    firsts: list[float] | None = None,
) -> list[tuple[float, float]]:
    """(wall s, CPU s) of bare Pi processes with the isolation flags the evaluator uses,
    started as it starts them (`<pinned node> <bundle>`, a copy of the warm compile cache);
    with `to_first_request`, until Pi first asks the model; `firsts`: see `bare_runs`."""
    from pytest_skill_eval.hosts.compile_cache import subject_cache, warm_cache
    from pytest_skill_eval.hosts.pi.binary import pi_executable
    from pytest_skill_eval.hosts.pi.config import pi_agent_files, settings_json

    pi = pi_executable(None, REPO)
    warm = warm_cache(f"pi-{pi.version}", pi.runtime, pi.command()[:2]) if pi.runtime else None

    def command(route: Any, base: Path) -> tuple[list[str], dict[str, str]]:
        for name in ("home", "agent"):
            (base / name).mkdir()
        if fixture:
            (base / "work" / "README.md").write_text("A task.\n")
        (base / "agent" / "models.json").write_text(json.dumps(pi_agent_files(route)))
        (base / "agent" / "settings.json").write_text(json.dumps(settings_json()))
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(base / "home"),
            "PI_CODING_AGENT_DIR": str(base / "agent"),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
        }
        env |= subject_cache(warm, base)
        argv = [
            *pi.command(), "--mode", "json", "-p", "--no-session", "--no-extensions",
            "--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files",
            "--tools", "read", "--model", "skill-eval/scripted", prompt,
        ]  # fmt: skip
        return argv, env

    return bare_runs(
        interactions, runs, tmp, command, to_first_request=to_first_request, firsts=firsts
    )


def overhead(
    name: str,
    bare_key: str,
    items_of: Callable[[Path], list[float]],
    bare_of: Callable[[int, Path], list[float]],
    prompt: str,
    reply: dict[str, Any],
    groups: int = 10,
    rounds: int = 5,
    also: tuple[str, Callable[[int, Path], list[float]]] | None = None,
) -> dict[str, Any]:
    """Median item wall time minus median bare-host wall time over `groups` one-turn
    description groups, printed against the 150 ms / 15% bars.

    The groups run in `rounds` small suites (`items_of(root)`: each item's time), each followed
    by as many bare runs as it has items (`bare_of(runs, directory)`), so a drift of the machine
    during the benchmark reaches both sides alike instead of landing in the difference. `also`
    names a second bare command, run alike and reported beside the first.
    """
    items: list[float] = []
    bare: list[float] = []
    other: list[float] = []
    per_round = max(1, groups // rounds)
    # Bare runs keep their homes where the evaluator makes its isolated homes.
    with tempfile.TemporaryDirectory() as tmp, bare_scratch() as homes:
        for k in range(rounds):
            root, bare_dir = Path(tmp) / f"suite{k}", Path(homes) / f"bare{k}"
            description_suite(root, per_round, prompt, reply)
            bare_dir.mkdir()
            items += items_of(root)
            bare += bare_of(per_round * 2, bare_dir)
            if also is not None:
                (also_dir := Path(homes) / f"also{k}").mkdir()
                other += also[1](per_round * 2, also_dir)
    item_median, bare_median = statistics.median(items), statistics.median(bare)
    difference = item_median - bare_median
    extra: dict[str, Any] = {}
    if also is not None:
        other_median = statistics.median(other)
        extra = {
            f"{also[0]}_median_s": round(other_median, 3),
            f"overhead_vs_{also[0]}_ms": round((item_median - other_median) * 1000, 1),
        }
    return emit(
        name,
        overhead_ms=round(difference * 1000, 1),
        overhead_ratio=round(difference / bare_median, 3),
        goal_ms=150,
        goal_ratio=0.15,
        item_median_s=round(item_median, 3),
        **{bare_key: round(bare_median, 3)},
        **extra,
        runs=len(items),
    )


def one_turn_overhead(
    name: str,
    bare_key: str,
    items_of: Callable[[Path], list[float]],
    command: BareCommand,
    groups: int,
    also: tuple[str, BareCommand] | None = None,
) -> dict[str, Any]:
    """`overhead` of `PROMPT` answered by `REPLY`, against bare runs of `command` (and of
    `also`'s, reported beside): a host's benchmark gives only its items and its bare command."""
    return overhead(
        name,
        bare_key,
        items_of,
        _bare_walls(command),
        PROMPT,
        REPLY,
        groups,
        also=None if also is None else (also[0], _bare_walls(also[1])),
    )
