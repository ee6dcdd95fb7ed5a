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

from pytest_skill_eval.analysis.gate import evaluate, rejected
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


def _trial_number(number: int) -> Any:
    def edit(invocation: dict[str, Any]) -> None:
        invocation["selection"]["trial"] = number

    return edit


@pytest.fixture
def trials(tmp_path: Path) -> list[Path]:
    source = build_result(tmp_path / "root")
    copies = []
    for index in range(9):
        trial = source.parent / f"trial-{index}"
        shutil.copytree(source, trial)
        _edit(trial / "groups" / GROUP / "deterministic-grade.json", _regressed)
        _edit(trial / "invocation.json", _trial_number(index + 1))  # one invocation's trials
        for run in trial.glob("groups/*/*/run.json"):  # each run its own, as every run is
            _edit(run, lambda data, at=run: data.update(nonce=f"{at.parent}"))
        copies.append(trial)
    return copies


def test_holm_across_the_suite_needs_more_than_the_raw_p_value(trials: list[Path]) -> None:
    # Eight pass-to-fail pairs: the always-valid p = 2^8 / C(16, 8) = 0.0199 < 0.05, but three
    # comparisons make the smallest adjusted p 0.0597: the gate passes. Nine: 0.0316, it fails.
    eight = {t.name: t for t in evaluate(trials[:8], alpha=0.05)}
    assert sorted(eight) == [
        f"{GROUP}/entry-in-fixed",
        f"{GROUP}/only-changelog",
        "natural-activation/skill-read-on-first-turn",
    ]
    entry = eight[f"{GROUP}/entry-in-fixed"]
    assert (entry.pass_to_fail, entry.fail_to_pass) == (8, 0)
    assert entry.p == pytest.approx(2**8 / 12870)
    assert entry.adjusted == pytest.approx(3 * 2**8 / 12870)
    assert not any(t.rejected for t in eight.values())
    assert eight["natural-activation/skill-read-on-first-turn"].p == 1.0
    assert rejected(trials, alpha=0.05) == [
        f"significant regression: {GROUP}/entry-in-fixed: pass-to-fail 9, fail-to-pass 0, "
        "Holm-adjusted p=0.03159 (pooled over 9 trial(s) of 1 invocation(s))"
    ]
    assert rejected(trials, alpha=0.01) == []


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
    names = [t.name for t in evaluate(trials, alpha=0.05)]
    assert sorted(names) == [
        f"{GROUP}/entry-in-fixed on codex",
        f"{GROUP}/only-changelog on codex",
        "natural-activation/skill-read-on-first-turn on pi",
    ]
