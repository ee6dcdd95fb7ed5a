"""`bench.accounting`: a serial run's CPU counted where it is spent, per item and per child."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import accounting

# One item spins in-process, one starts a child that spins, one is skipped: each side's CPU
# must land on its own line.
ITEMS = """
import subprocess, sys, time

def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def test_in_process():
    spin(0.3)

def test_child():
    subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 0.3\\n"
                    "while time.process_time() < end: pass"], check=True)
"""


def test_the_process_and_its_children_are_counted_apart_inside_and_outside_items(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "accounting.json"
    monkeypatch.setenv(accounting.ENV, str(out))
    pytester.makepyfile(ITEMS)
    pytester.runpytest_subprocess(
        "-p", "bench.accounting", "-p", "no:cacheprovider"
    ).assert_outcomes(passed=2)
    figures = accounting.read(out)
    assert figures["items"] == 2
    inside = figures["children_s"]["in_items"]
    [python] = inside  # the one child: the interpreter the second item started
    assert python.startswith("python")
    assert inside[python] >= 0.25  # the child's spin, with its interpreter's start
    assert figures["self_in_items_s"] >= 0.25  # the in-process spin
    assert "outside_items" not in figures["children_s"]


def test_a_host_process_is_told_apart_by_the_module_that_spawned_it() -> None:
    assert accounting._kind(["/x/node", "pi.js"], accounting.HOST_SPAWNER) == accounting.HOST
    assert accounting._kind(["/usr/bin/python3", "-I", "/p/guardian.py", "/w"], "m") == "guardian"
    assert accounting._kind(["/usr/bin/git", "status"], "m") == "git"


def test_per_subject_puts_every_non_host_child_on_the_evaluator() -> None:
    figures = {
        "items": 4,
        "self_in_items_s": 0.2,
        "self_outside_items_s": 0.8,
        "children_s": {
            "in_items": {"host": 2.0, "guardian": 0.1, "git": 0.1},
            "outside_items": {"node": 0.2},
        },
    }
    assert accounting.per_subject(figures, 4) == {
        "host_cpu_s": 0.5,
        "evaluator_cpu_s": 0.1,
        "evaluator_session_cpu_s": 0.25,
    }
