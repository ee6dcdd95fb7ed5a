"""Helpers shared by the benchmarks: suites on disk, running pytest, printing one JSON line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
PI = REPO / "node_modules" / ".bin" / "pi"

SKILL = """---
name: bench-skill
description: A skill used by the benchmarks.
---

Reply `done`.
"""


def emit(name: str, **figures: Any) -> dict[str, Any]:
    """Print one benchmark result as a JSON line and return it."""
    line = {"benchmark": name, **figures}
    print(json.dumps(line), flush=True)
    return line


def body_suite(root: Path, groups: int, calls: int, latency_ms: int) -> Path:
    """A suite of `groups` body groups whose subjects each make `calls` model calls."""
    (root / "skills" / "bench-skill").mkdir(parents=True)
    (root / "skills" / "bench-skill" / "SKILL.md").write_text(SKILL)
    (root / "fixture").mkdir()
    (root / "fixture" / "README.md").write_text("task\n")
    (root / "groups").mkdir()
    refs = []
    for index in range(groups):
        group_id = f"g{index:02d}"
        group = {
            "schema_version": 1,
            "kind": "group",
            "id": group_id,
            "type": "body",
            "input": {"prompt": "Do the task."},
            "fixture": "fixture",
            "tools": ["read"],
            "variants": {
                "baseline": {
                    "source": {"kind": "working-tree"},
                    "skills": [],
                    "target": None,
                    "context": [],
                },
                "candidate": {
                    "source": {"kind": "working-tree"},
                    "skills": ["skills/bench-skill"],
                    "target": 0,
                    "context": [],
                },
            },
            "expectations": [],
            "review_questions": [],
        }
        (root / "groups" / f"{group_id}.json").write_text(json.dumps(group))
        refs.append(f"groups/{group_id}.json")
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
        for variant in ("baseline", "candidate"):
            path = root / "scripts" / group_id / f"{variant}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump({"version": 1, "interactions": [*reads, final]}))
    suite = {"schema_version": 1, "kind": "suite", "id": "bench", "groups": refs}
    (root / "suite.json").write_text(json.dumps(suite))
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
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(root),
            "-c",
            os.devnull,
            "--skill-eval",
            str(root / "suite.json"),
            "--skill-eval-root",
            str(root),
            "--skill-eval-cassettes",
            str(root / "scripts"),
            *extra,
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
