"""`--skill-eval-trials auto`: real scripted runs stop when the sequential test resolves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.pi.config import pi_agent_files
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from pytest_skill_eval.views.html import render_html
from pytest_skill_eval.views.text import render_aggregate_text
from tests.support.files import read_json
from tests.support.roots import answers_root, body_group, make_root, on_fast_host, write_answer
from tests.support.runs import aggregates, results, run, skill_eval_args

pytestmark = pytest.mark.pi


def _aggregate(root: Path) -> dict[str, Any]:
    (aggregate_dir,) = aggregates(root)
    data: dict[str, Any] = read_json(aggregate_dir / "aggregate.json")
    return data


def _groups(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {group["id"]: group for group in data["groups"]}


@pytest.mark.codex
def test_a_clear_difference_stops_early_under_n_2(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # The candidate always passes and the baseline always fails: seven fail-to-pass pairs reach
    # E = C(14, 7) / 2^7 = 26.8 >= 1/0.05. A group without a comparison runs one trial.
    nocomp = body_group("nocomp", **on_fast_host())  # trials follow evidence, not hosts
    for expectation in nocomp["expectations"]:
        del expectation["comparison"]
    root = make_root(
        tmp_path / "root",
        [body_group("differs", **on_fast_host()), nocomp],
        {
            "differs/baseline": write_answer("no"),
            "differs/candidate": write_answer("yes"),
            "nocomp/baseline": write_answer("yes"),
            "nocomp/candidate": write_answer("yes"),
        },
    )
    result = run(
        pytester, root, "-n", "2", "--skill-eval-trials", "auto", "--skill-eval-max-trials", "8"
    )
    assert result.ret == 0, result.stdout.str()
    outcomes = result.parseoutcomes()
    # differs: 7 trials × 2 run, trial 8 skipped; nocomp: trial 1 run, trials 2-8 skipped.
    assert outcomes["skipped"] == 2 + 14
    # Every trial ran something but the eighth, which is not kept.
    assert len(results(root)) == 7
    data = _aggregate(root)
    assert data["state"] == "complete"
    assert data["requestedTrials"] == 8
    assert data["adaptive"]["trialsRun"] == 7
    assert data["adaptive"]["method"] == "mixture-sequential-mcnemar"
    groups = _groups(data)
    assert groups["differs"]["trials"] == 7
    assert groups["differs"]["adaptive"] == {"trialsUsed": 7, "stop": "resolved"}
    (comparison,) = groups["differs"]["comparisons"]
    assert comparison["transitions"]["fail-to-pass"] == 7
    assert comparison["sequential"]["resolvedAtTrial"] == 7
    assert comparison["sequential"]["eValue"] == pytest.approx(26.8125)
    assert comparison["differenceUnresolved"] is False
    assert groups["nocomp"]["adaptive"] == {"trialsUsed": 1, "stop": "no-comparisons"}
    result.stdout.fnmatch_lines(["*sequential test: resolved after trial 7 (E=26.81* >= 20)*"])
    (aggregate_dir,) = aggregates(root)
    assert "sequential test: resolved after trial 7" in render_aggregate_text(aggregate_dir)
    page = render_html(aggregate_dir)
    assert "stopped: every comparison resolved" in page
    assert "no comparison to resolve: one trial" in page


@pytest.mark.codex
def test_a_comparison_that_cannot_resolve_stops_for_futility_and_says_why(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # Seven discordant pairs are the fewest that resolve: with two trials at most, trial 1's
    # agreement leaves nothing trial 2 could change, so it is not run.
    root = answers_root(tmp_path / "root", {"same/baseline": "yes", "same/candidate": "yes"})
    result = run(
        pytester, root, "--skill-eval-trials", "auto", "--skill-eval-max-trials", "2", "-rs"
    )
    assert result.ret == 0, result.stdout.str()
    assert result.parseoutcomes().get("skipped", 0) == 2
    assert len(results(root)) == 1
    groups = _groups(_aggregate(root))
    assert groups["same"]["adaptive"] == {"trialsUsed": 1, "stop": "futility"}
    (comparison,) = groups["same"]["comparisons"]
    assert comparison["differenceUnresolved"] is True
    assert comparison["sequential"]["resolvedAtTrial"] is None
    assert comparison["sequential"]["stop"] == "cannot-resolve"
    result.stdout.fnmatch_lines(
        [
            "*same@codex: 1 trial, stopped by futility*",
            "*sequential test: unresolved (E=1 < 20); stopped: no outcome of the trials left*",
            "*not resolved, stopped for futility after 1 trial*",
            "*after trial 1 every comparison is resolved or stops for futility (says-yes cannot "
            "resolve in the trials left (0 fail-to-pass, 0 pass-to-fail in 1)); trial 2 not run*",
        ]
    )


def test_the_spend_ceiling_stops_adaptive_trials_and_says_so(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # $1 per subject against a 1.5 USD ceiling: trial 1's two subjects exhaust it (at most 20
    # trials, so that trial 1 leaves the comparison able to resolve).
    prices = {"input": 1000.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0}
    root = make_root(
        tmp_path / "root", [body_group("same", model={"model": "budgetco/priced"})], {}
    )
    reply = {"response": {"text": "done", "usage": {"input": 1000, "output": 0}}}
    with ScriptedModelServer() as server:
        route = server.open_route(parse_script({"version": 1, "interactions": [reply] * 8}))
        models = pi_agent_files(route, provider="budgetco", model_id="priced", cost=prices)
        (root / "models.json").write_text(json.dumps(models))
        result = pytester.runpytest_subprocess(
            *skill_eval_args(
                root, "--skill-eval-trials", "auto", "--skill-eval-max-trials", "20",
                "--skill-eval-max-cost", "1.5",
                "-o", f"skill_eval_pi_models={root / 'models.json'}", cassettes=False,
            )
        )  # fmt: skip
    assert result.ret == 1, result.stdout.str()
    data = _aggregate(root)
    assert data["budget"]["exhausted"] is True
    group = _groups(data)["same"]
    assert group["adaptive"] == {"trialsUsed": 1, "stop": "budget-exhausted"}
    (comparison,) = group["comparisons"]
    assert comparison["sequential"]["stop"] == "budget-exhausted"
    result.stdout.fnmatch_lines(["*stopped by budget-exhausted*", "*the spend ceiling*"])


@pytest.mark.codex
def test_the_example_suite_stops_before_the_maximum(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    # Replayed arms answer alike in every trial: each fail-to-pass comparison resolves after
    # seven, and only-changelog (pass-to-pass in every trial) stops for futility, where it ran
    # all twenty before.
    result = run(
        pytester, example_root, "--skill-eval-trials", "auto", "--skill-eval-host", "codex"
    )
    assert result.ret == 0, result.stdout.str()
    groups = _groups(_aggregate(example_root))
    assert groups["natural-activation"]["adaptive"] == {"trialsUsed": 7, "stop": "resolved"}
    assert groups["changelog-entry"]["adaptive"] == {"trialsUsed": 7, "stop": "futility"}
    stops = {c["id"]: c["sequential"]["stop"] for c in groups["changelog-entry"]["comparisons"]}
    assert stops == {"entry-in-fixed": "resolved", "only-changelog": "unlikely-to-resolve"}
    result.stdout.fnmatch_lines(
        ["*changelog-entry@codex: entry-in-fixed better with the skill at alpha 0.05 (resolved "
         "at trial 7); only-changelog not resolved, stopped for futility after 7 trials*"]
    )  # fmt: skip
