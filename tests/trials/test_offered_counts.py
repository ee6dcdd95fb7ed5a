"""How an aggregate counts the trials per offered state of a description variant's target."""

from __future__ import annotations

from typing import Any

from pytest_skill_eval.analysis.offered import count_run, record
from pytest_skill_eval.evidence.aggregates import AggregateGroup
from pytest_skill_eval.evidence.skill_records import OfferedState


def _run(activation: dict[str, Any]) -> dict[str, Any]:
    return {"evaluationType": "description", "activation": activation}


def test_runs_without_a_recorded_offer_leave_the_group_as_older_aggregates_had_it() -> None:
    row: AggregateGroup = {"id": "g", "trials": 2, "comparisons": [], "checks": []}
    counts: dict[OfferedState, int] = {}
    count_run(counts, _run({"targetRead": True}))  # a run recorded before offered skills
    count_run(counts, None)
    record(row, {})
    assert counts == {}
    assert "offered" not in row


def test_each_trial_counts_once_in_the_state_its_target_was_offered_in() -> None:
    row: AggregateGroup = {"id": "g", "trials": 3, "comparisons": [], "checks": []}
    counts: dict[OfferedState, int] = {}
    for state in ("cut", "intact", "cut"):
        count_run(counts, _run({"target": {"index": 0, "name": "t"}, "offered": state}))
    record(row, {"candidate": {"variant": "candidate", "target": "t", "trials": counts}})
    trials = {"intact": 1, "cut": 2, "altered": 0, "absent": 0, "unobservable": 0}
    assert row["offered"] == [{"variant": "candidate", "target": "t", "trials": trials}]
