"""Per-arm usage facts: each arm's mean and 95% interval across trials, the paired change, and
where they show (aggregate.json, the text view, the summary, the HTML report)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.analysis.stats import mean_interval, t_quantile_975
from pytest_skill_eval.analysis.trials import aggregate
from pytest_skill_eval.analysis.usage import arm_usage, run_facts
from pytest_skill_eval.views import render_html, render_text
from pytest_skill_eval.views.summary import render_markdown
from pytest_skill_eval.views.usage import usage_rows
from tests.views.conftest import build_result


def _run(tokens_in: int, calls: int, usd: float, tools: int = 0) -> dict[str, Any]:
    return {
        "state": "complete",
        "startedAt": "2026-12-01T00:00:00Z",
        "usage": {"input": tokens_in, "output": 10, "cacheRead": 5, "cacheWrite": 0},
        "modelCalls": calls,
        "turns": [{"turn": 1, "toolActivity": [{}] * tools, "wallTimeMs": 1000}],
        "spend": {"usd": usd, "simulated": False},
    }


def test_one_runs_facts_come_from_its_record() -> None:
    assert run_facts(_run(900, 2, 0.01, tools=3)) == {
        "input": 900,
        "output": 10,
        "cached": 5,
        "modelCalls": 2,
        "turns": 1,
        "toolCalls": 3,
        "wallTimeMs": 1000,
        "costUsd": 0.01,
    }


def test_each_arm_has_its_mean_and_interval_and_the_change_is_paired_by_trial() -> None:
    trials = [
        {"baseline": _run(1000, 1, 0.002), "candidate": _run(2000, 2, 0.004)},
        {"baseline": _run(1200, 1, 0.002), "candidate": _run(2600, 3, 0.005)},
        {"baseline": _run(1100, 1, 0.002), "candidate": _run(2300, 2, 0.0045)},
        # A candidate that never started spent nothing: not a zero, not counted.
        {"baseline": _run(1100, 1, 0.002), "candidate": {"state": "cancelled"}},
    ]
    usage = arm_usage(trials)
    assert usage is not None
    assert usage["runs"] == {"baseline": 4, "candidate": 3}
    baseline_in = usage["arms"]["baseline"]["input"]
    assert baseline_in["mean"] == pytest.approx(1100)
    assert baseline_in["trials"] == 4
    half = t_quantile_975(3) * math.sqrt(20000 / 3) / 2  # sd of 1000,1200,1100,1100 over √4
    assert baseline_in["interval"] == pytest.approx([1100 - half, 1100 + half])
    change = usage["change"]["input"]
    assert change["pairs"] == 3
    assert change["difference"] == pytest.approx(1200)  # (1000 + 1400 + 1200) / 3
    assert change["ratio"] == pytest.approx(6900 / 3300)
    assert usage["change"]["modelCalls"]["difference"] == pytest.approx(4 / 3)
    assert usage["simulated"] is False


def test_a_fact_no_run_reports_is_unavailable_and_an_arm_interval_stays_non_negative() -> None:
    quiet = {**_run(10, 1, 0.0), "modelCalls": None}
    loud = {**_run(5000, 1, 0.0), "modelCalls": None}
    usage = arm_usage([{"baseline": quiet}, {"baseline": loud}])
    assert usage is not None
    assert usage["arms"]["baseline"]["modelCalls"] == {"mean": None, "interval": None, "trials": 0}
    interval = usage["arms"]["baseline"]["input"]["interval"]
    assert interval is not None
    assert interval[0] == 0.0  # the t interval of 10 and 5000 reaches below zero
    assert interval[1] > 5000
    assert usage["change"]["input"]["pairs"] == 0
    assert arm_usage([{"baseline": None, "candidate": {"state": "not-selected"}}]) is None


def test_a_mean_interval_needs_two_values() -> None:
    assert mean_interval([]) is None
    assert mean_interval([3.0]) == (3.0, None)
    mean, interval = mean_interval([1.0, 3.0]) or (0.0, None)
    assert mean == 2.0
    assert interval == pytest.approx((2 - 12.706, 2 + 12.706))
    assert t_quantile_975(40) == pytest.approx(2.021, abs=1e-3)


def test_the_aggregate_and_every_view_show_the_usage_per_arm(tmp_path: Path) -> None:
    first = build_result(tmp_path / "root")
    second = first.parent / "20261130215314-00000002"
    shutil.copytree(first, second)
    record = aggregate("20261130215399-aaaaaaaa", [first, second], 2)
    natural = next(g for g in record["groups"] if g["id"] == "natural-activation")
    usage = natural.get("usage")
    assert usage is not None
    assert usage["arms"]["baseline"]["input"] == {"mean": 900, "interval": [900, 900], "trials": 2}
    assert usage["arms"]["candidate"]["input"]["mean"] == 2600
    assert usage["change"]["input"]["ratio"] == pytest.approx(2600 / 900)
    assert usage["simulated"] is True
    text = render_text(first)
    assert "usage\ttokens-in\tbaseline=900\tcandidate=2,600\tchange=+1,700, x2.89" in text
    summary = render_markdown(first)
    assert "| natural-activation | 900→2,600 (x2.89) | 14→42 (x3.00) |" in summary
    assert "Usage per arm, baseline→candidate (cost simulated)" in summary
    html = render_html(first)
    assert "<td>tokens-in</td><td>900</td><td>2,600</td><td>+1,700, x2.89</td>" in html


def _reused(run: dict[str, Any]) -> dict[str, Any]:
    return {**run, "reused": {"result": "20261130000000-00000000", "origin": "earlier"}}


def test_a_reused_arm_is_compared_unpaired_and_its_cost_is_not_spent_again() -> None:
    # Every baseline copied from an earlier result: no candidate pairs with a baseline run of
    # this invocation, so the change is the difference of means with Welch's interval.
    trials = [
        {"baseline": _reused(_run(1000, 1, 0.002)), "candidate": _run(2000, 2, 0.004)},
        {"baseline": _reused(_run(1200, 1, 0.002)), "candidate": _run(2600, 3, 0.005)},
        {"baseline": _reused(_run(1100, 1, 0.002)), "candidate": _run(2300, 2, 0.0045)},
    ]
    usage = arm_usage(trials)
    assert usage is not None
    change = usage["change"]["input"]
    assert change["method"] == "unpaired-welch"
    assert "reused from an earlier result" in change.get("unpaired", "")
    assert change["pairs"] == 0
    assert change["difference"] == pytest.approx(2300 - 1100)
    # Welch: variances 10000 and 90000 over 3 each; df = 2.44 rounds down to 2.
    se = math.sqrt(10000 / 3 + 90000 / 3)
    half = t_quantile_975(2) * se
    assert change["interval"] == pytest.approx([1200 - half, 1200 + half])
    assert usage["reused"] == {"baseline": 3, "candidate": 0}
    # The baseline's runs cost what they cost, but this invocation spent nothing on them.
    assert usage["arms"]["baseline"]["costUsd"]["mean"] == pytest.approx(0.002)
    assert usage["spentUsd"] == pytest.approx({"baseline": 0.0, "candidate": 0.0135})
    # Paired by trial when nothing was reused.
    fresh = arm_usage(
        [{v: {k: r for k, r in t[v].items() if k != "reused"} for v in t} for t in trials]
    )
    assert fresh is not None
    assert fresh["change"]["input"]["method"] == "paired"
    assert fresh["change"]["input"]["pairs"] == 3
    assert fresh["spentUsd"] == pytest.approx({"baseline": 0.006, "candidate": 0.0135})


def test_earlier_attempts_are_counted_as_spent() -> None:
    failed = {**_run(300, 2, 0.001), "state": "infrastructure-failed"}
    never = {"state": "infrastructure-failed"}  # its subject never started: spent nothing
    trials = [{"baseline": _run(1000, 1, 0.002), "candidate": _run(2000, 2, 0.004)}]
    attempts = [{"candidate": [failed, failed, never]}]
    usage = arm_usage(trials, attempts)
    assert usage is not None
    assert usage["attempts"] == {
        "baseline": {"runs": 0, "modelCalls": 0.0, "costUsd": 0.0},
        "candidate": {"runs": 2, "modelCalls": 4.0, "costUsd": pytest.approx(0.002)},
    }
    assert usage["spentUsd"] == pytest.approx({"baseline": 0.002, "candidate": 0.006})
    # The arm's facts stay those of its final runs.
    assert usage["arms"]["candidate"]["modelCalls"]["mean"] == 2


def test_the_views_say_a_change_is_unpaired_and_what_was_spent_and_retried() -> None:
    failed = {**_run(300, 2, 0.001), "state": "infrastructure-failed"}
    trials = [
        {"baseline": _reused(_run(1000, 1, 0.002)), "candidate": _run(2000, 2, 0.004)},
        {"baseline": _reused(_run(1200, 1, 0.002)), "candidate": _run(2600, 3, 0.005)},
    ]
    rows = {r.fact: r for r in usage_rows(arm_usage(trials, [{"candidate": [failed]}]))}
    assert rows["tokens-in"].change.endswith(", unpaired (Welch: an arm was reused)")
    spent = rows["spent-usd"]
    assert (spent.baseline, spent.candidate) == ("0.000000", "0.010000")
    attempts = rows["attempts"]
    assert attempts.baseline == "0 (calls 0, cost 0.000000)"
    assert attempts.candidate == "1 (calls 2, cost 0.001000)"
    # Nothing reused nor retried: the rows are those of every run.
    plain = [{v: {k: x for k, x in t[v].items() if k != "reused"} for v in t} for t in trials]
    assert [r.fact for r in usage_rows(arm_usage(plain))][-1] == "cost-usd"
