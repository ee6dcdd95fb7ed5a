"""The aggregate's cross-host table: counts per host, and whether they held on every host."""

from __future__ import annotations

from typing import Any

from pytest_skill_eval.analysis.trials import cross_host
from pytest_skill_eval.views.hosts import CrossHostRow, aggregate_cross_host_lines


def _group(host: str | None, passes: int, f2p: int) -> Any:
    group: dict[str, Any] = {
        "id": "g",
        "trials": 3,
        "checks": [{"id": "c", "pass": passes, "fail": 3 - passes, "unavailable": 0}],
        "comparisons": [{"id": "k", "transitions": {"fail-to-pass": f2p, "pass-to-pass": 3 - f2p}}],
    }
    if host is not None:
        group["host"] = host
    return group


def test_counts_per_host_and_whether_they_held() -> None:
    solo = _group(None, 1, 0)
    solo["id"] = "solo"
    tables = cross_host([_group(None, 3, 2), _group("claude-code", 2, 2), solo])
    assert len(tables) == 1  # a group on one host has no table
    (table,) = tables
    assert table["hosts"] == ["pi", "claude-code"]
    check, comparison = table["rows"]
    assert check == {
        "kind": "check",
        "id": "c",
        "hosts": {
            "pi": {"pass": 3, "fail": 0, "unavailable": 0},
            "claude-code": {"pass": 2, "fail": 1, "unavailable": 0},
        },
        "held": False,
    }
    assert comparison["held"] is True
    assert table["held"] is False
    lines = aggregate_cross_host_lines({"crossHost": tables})
    assert lines == [
        "  cross-host g (pi, claude-code): differs between hosts",
        "    check c: pi=[pass=3] claude-code=[pass=2 fail=1] differs",
        "    comparison k: pi=[fail-to-pass=2 pass-to-pass=1] "
        "claude-code=[fail-to-pass=2 pass-to-pass=1] held",
    ]


def test_an_offered_row_is_not_intact_when_some_trials_saw_the_target_cut() -> None:
    mixed = CrossHostRow(
        "offered", "candidate-target t", {"pi": "intact=2", "codex": "intact=1 cut=1"}
    )
    assert mixed.not_intact
    seen = CrossHostRow(
        "offered", "candidate-target t", {"pi": "intact=2", "codex": "unobservable=2"}
    )
    assert not seen.not_intact
