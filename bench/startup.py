"""Pi's start-up CPU per real start: stock Pi on the system Node, its bundle on the system Node,
and the form the plugin uses (the bundle on the pinned Node with a private copy of the warm
compile cache), side by side in one run.

A real start is one isolated subject as the evaluator starts it: a fresh HOME, agent dir, TMPDIR
and workspace, the guard extension, `--mode json -p` with the evaluator's flags, against a
scripted model that asks for one `write` and then answers. A start counts only when the file was
written and `agent_end` came. CPU is the child's user + system time as the kernel accounts it
when the child is reaped (`wait4`). The forms run in rounds, one start of each per round in a
rotating order, after one warm-up each; each form's figure is the median over rounds of its CPU
divided by stock Pi's in the same round, so a machine that drifts reaches every form alike.
Target: the plugin's form at most 0.40× stock Pi on the system Node.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import PI, REPO, emit

GOAL = 0.40
WRITE = {"name": "write", "arguments": {"path": "hello.txt", "content": "hi"}}
INTERACTIONS = [{"response": {"tool_calls": [WRITE]}}, {"response": {"text": "done"}}]
# The argv prefix of each form and whether it gets the evaluator's compile cache.
Form = tuple[list[str], bool]


def forms() -> dict[str, Form]:
    """Stock Pi on `node` from PATH (as before the pinned runtime), its bundle there, and the
    plugin's own form."""
    from pytest_skill_eval.hosts.pi.binary import pi_executable

    plugin = pi_executable(None, REPO)
    if plugin.bundle is None or plugin.runtime is None:
        raise SystemExit("the plugin would not run Pi's bundle on the pinned Node here")
    system = shutil.which("node")
    if system is None:
        raise SystemExit("no node on PATH to compare with")
    return {
        "stock_system_node": ([str(PI)], False),
        "bundle_system_node": ([system, str(plugin.bundle.entry)], False),
        "plugin": (plugin.command(), True),
    }


def _argv(prefix: list[str], prompt: str) -> list[str]:
    from pytest_skill_eval.hosts.pi.binary import pi_argv
    from pytest_skill_eval.hosts.pi.extensions import GUARD

    return pi_argv(
        prefix, mode="json", session_dir=None, extensions=[GUARD], tools=["read", "write"],
        skills=[], model={"model": "skill-eval/scripted"}, prompt=prompt,
    )  # fmt: skip


def real_start(route: Any, base: Path, form: Form) -> float:
    """CPU seconds of one isolated subject in `base`, started as `form`."""
    from pytest_skill_eval.hosts.compile_cache import subject_cache, warm_cache
    from pytest_skill_eval.hosts.pi.binary import base_environment
    from pytest_skill_eval.hosts.pi.config import pi_agent_files, settings_json
    from pytest_skill_eval.hosts.pi.registration import PINNED

    prefix, cached = form
    work = base / "work"
    for directory in (work, base / "home", base / "agent", base / "tmp"):
        directory.mkdir(parents=True)
    (base / "agent" / "models.json").write_text(json.dumps(pi_agent_files(route)))
    (base / "agent" / "settings.json").write_text(json.dumps(settings_json()))
    env = base_environment(base / "home", base / "agent", base / "tmp")
    env |= {
        "SKILL_EVAL_ALLOWED_ROOTS": json.dumps([str(work)]),
        "SKILL_EVAL_WRITABLE_ROOT": str(work),
        "SKILL_EVAL_ALLOWED_TOOLS": json.dumps(["read", "write"]),
        "SKILL_EVAL_PROMPT_MODE": "isolated",
        "SKILL_EVAL_CONTEXT_MANIFEST": "",
    }
    if cached:
        runtime = _pinned()
        env |= subject_cache(warm_cache(f"pi-{PINNED}", runtime, prefix[:2]), base)
    child = subprocess.Popen(
        _argv(prefix, "Write hello.txt."), cwd=work, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert child.stdout is not None
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    ended = any(json.loads(line).get("type") == "agent_end" for line in out.splitlines() if line)
    if child.returncode != 0 or not ended or not (work / "hello.txt").is_file():
        raise SystemExit(f"{' '.join(prefix)}: the subject did not write hello.txt and end")
    return usage.ru_utime + usage.ru_stime


def _pinned() -> Any:
    from pytest_skill_eval.hosts.runtime import node_runtime

    return node_runtime(None, REPO)


def measure(rounds: int, start: Callable[[str, Path], float], names: list[str]) -> dict[str, Any]:
    """Per form: median CPU and the median of its per-round ratio to the first form's."""
    cpu: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm-up: caches built, files in the page cache
        start(name, Path(f"warm-{name}"))
    for index in range(rounds):
        order = names[index % len(names) :] + names[: index % len(names)]
        seconds = {name: start(name, Path(f"r{index}-{name}")) for name in order}
        for name in names:
            cpu[name].append(seconds[name])
            ratios[name].append(seconds[name] / seconds[names[0]])
    return {
        name: {
            "cpu_median_s": round(statistics.median(cpu[name]), 3),
            "ratio_median": round(statistics.median(ratios[name]), 3),
        }
        for name in names
    }


def main(rounds: int = 8) -> dict[str, object]:
    """Print each form's start-up CPU and its ratio to stock Pi on the system Node."""
    from pytest_skill_eval.modelserver.scriptparse import parse_script
    from pytest_skill_eval.modelserver.server import ScriptedModelServer

    chosen = forms()
    script = parse_script({"version": 1, "interactions": INTERACTIONS})
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as server:

        def start(name: str, where: Path) -> float:
            route = server.open_route(script)
            try:
                return real_start(route, Path(tmp) / where, chosen[name])
            finally:
                route.close()

        figures = measure(rounds, start, list(chosen))
    return emit(
        "startup",
        plugin_vs_stock_system_node=figures["plugin"]["ratio_median"],
        goal_ratio=GOAL,
        forms=figures,
        rounds=rounds,
    )


if __name__ == "__main__":
    main()
