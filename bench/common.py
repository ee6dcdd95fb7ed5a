"""Helpers shared by the benchmarks: suites on disk, running pytest, printing one JSON line.

Suites are built with the tests' own definition-root builders (`tests.support`), so a change to
the definition format is made once for tests and benchmarks alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.paths import PI, REPO
from tests.support.roots import VARIANTS, Group, body_group, build, make_root, variant
from tests.support.runs import skill_eval_args

__all__ = ["PI", "REPO", "body_suite", "description_suite", "emit", "run_suite"]


def emit(name: str, **figures: Any) -> dict[str, Any]:
    """Print one benchmark result as a JSON line and return it."""
    line = {"benchmark": name, **figures}
    print(json.dumps(line), flush=True)
    return line


def body_suite(root: Path, groups: int, calls: int, latency_ms: int) -> Path:
    """A suite of `groups` body groups whose subjects each make `calls` model calls."""
    reads = [
        {
            "response": {
                "tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}],
                "latency_ms": latency_ms,
            }
        }
        for _ in range(calls - 1)
    ]
    final = {"response": {"text": "done", "latency_ms": latency_ms}}
    ids = [f"g{index:02d}" for index in range(groups)]
    definitions = [
        body_group(group_id, input={"prompt": "Do the task."}, tools=["read"], expectations=[])
        for group_id in ids
    ]
    scripts = {f"{group_id}/{name}": [*reads, final] for group_id in ids for name in VARIANTS}
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


def run_suite(root: Path, *extra: str) -> tuple[float, float]:
    """Run the suite through pytest; returns (wall seconds, CPU seconds of all children)."""
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
            *skill_eval_args(root, *extra),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"benchmark suite failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu
