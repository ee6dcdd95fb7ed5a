"""The significant-regression gate over sealed trials: every comparison of the suite, Holm.

The trials are copies of the committed view fixture (three comparisons, all fail-to-pass),
with `entry-in-fixed` turned pass-to-fail, so each test states the counts it introduces.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.gate import evaluate, rejected
from tests.views.conftest import build_result

GROUP = "changelog-entry"


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _regressed(grade: dict[str, Any]) -> None:
    for comparison in grade["comparisons"]:
        if comparison["id"] == "entry-in-fixed":
            comparison["transition"] = "pass-to-fail"


@pytest.fixture
def trials(tmp_path: Path) -> list[Path]:
    source = build_result(tmp_path / "root")
    copies = []
    for index in range(6):
        trial = source.parent / f"trial-{index}"
        shutil.copytree(source, trial)
        _edit(trial / "groups" / GROUP / "deterministic-grade.json", _regressed)
        copies.append(trial)
    return copies


def test_holm_across_the_suite_needs_more_than_the_raw_p_value(trials: list[Path]) -> None:
    # Five pass-to-fail pairs: raw p = 1/32 = 0.031 < 0.05, but three comparisons make the
    # smallest adjusted p 3/32 = 0.094: the gate passes. Six: 3/64 = 0.047, it fails.
    five = {t.name: t for t in evaluate(trials[:5], adaptive=False, alpha=0.05)}
    assert sorted(five) == [
        f"{GROUP}/entry-in-fixed",
        f"{GROUP}/only-changelog",
        "natural-activation/skill-read-on-first-turn",
    ]
    entry = five[f"{GROUP}/entry-in-fixed"]
    assert (entry.pass_to_fail, entry.fail_to_pass) == (5, 0)
    assert entry.p == pytest.approx(1 / 32)
    assert entry.adjusted == pytest.approx(3 / 32)
    assert not any(t.rejected for t in five.values())
    assert five["natural-activation/skill-read-on-first-turn"].p == 1.0
    assert rejected(trials, adaptive=False, alpha=0.05) == [
        f"significant regression: {GROUP}/entry-in-fixed: pass-to-fail 6, fail-to-pass 0, "
        "Holm-adjusted p=0.04688 (pooled over 6 trial(s) of 6 invocation(s))"
    ]
    assert rejected(trials, adaptive=False, alpha=0.01) == []
    # The same six pairs under the sequential test: 2^6 / C(12, 6) = 0.07, times 3: no.
    assert rejected(trials, adaptive=True, alpha=0.05) == []


def test_a_suite_on_several_hosts_names_each_comparison_with_its_host(
    trials: list[Path],
) -> None:
    for trial in trials:
        shutil.move(trial / "groups" / GROUP, trial / "groups" / f"{GROUP}@codex")

        def on_codex(summary: dict[str, Any]) -> None:
            for record in summary["groups"]:
                if record["id"] == GROUP:
                    record["host"] = "codex"

        _edit(trial / "summary.json", on_codex)
    names = [t.name for t in evaluate(trials, adaptive=False, alpha=0.05)]
    assert sorted(names) == [
        f"{GROUP}/entry-in-fixed on codex",
        f"{GROUP}/only-changelog on codex",
        "natural-activation/skill-read-on-first-turn on pi",
    ]
