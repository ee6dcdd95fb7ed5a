"""Shards are balanced by recorded durations when a plan has them, else round-robin."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_skill_eval.scale.balance import assign, recorded_durations
from pytest_skill_eval.scale.plan import Unit


def _units(*seconds: float | None) -> list[Unit]:
    return [Unit(f"g{i}", 1, i + 1, ("baseline", "candidate"), s) for i, s in enumerate(seconds)]


def test_without_durations_units_go_round_robin() -> None:
    assert assign(_units(None, None, None, None, None), 2) == [1, 2, 1, 2, 1]


def test_longest_units_go_first_onto_the_least_loaded_shard() -> None:
    # Round-robin would give shard 1 the two long units (100 + 90) and shard 2 only 2 seconds.
    shards = assign(_units(100, 1, 90, 1), 2)
    assert shards == [1, 2, 2, 2]
    loads = {
        k: sum(s for s, k2 in zip((100, 1, 90, 1), shards, strict=True) if k2 == k) for k in (1, 2)
    }
    assert loads == {1: 100, 2: 92}


def test_an_untimed_unit_counts_as_the_mean_and_every_unit_lands_once() -> None:
    units = _units(30, None, 10, 20, None, 40)
    shards = assign(units, 3)
    assert sorted(set(shards)) == [1, 2, 3]
    assert len(shards) == len(units)
    assert assign(units, 3) == shards  # a pure function: every shard and the merge agree


def _run(directory: Path, started: str, completed: str) -> None:
    directory.mkdir(parents=True)
    record = {"state": "complete", "startedAt": started, "completedAt": completed}
    (directory / "run.json").write_text(json.dumps(record))


def test_durations_come_from_the_newest_finished_result(tmp_path: Path) -> None:
    old, new, unfinished = (
        tmp_path / name for name in ("20260101000000-a", "20260102000000-b", "20260103000000-c")
    )
    for result, took in ((old, "00:00:50"), (new, "00:00:07"), (unfinished, "00:09:00")):
        group = result / "groups" / "alpha"
        _run(group / "baseline", "2026-01-01T00:00:00.000Z", f"2026-01-01T{took}.000Z")
        _run(group / "candidate", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z")
    for result in (old, new):
        (result / "summary.json").write_text("{}")
    assert recorded_durations(tmp_path) == {"alpha": 8.0}
    assert recorded_durations(tmp_path / "absent") == {}
