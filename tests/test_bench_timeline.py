"""`bench.timeline`: where a parallel run's time went, its tail split by who was still running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import timeline


def _log(path: Path, events: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return path


def test_the_tail_is_split_into_the_workers_the_controller_and_the_exit(tmp_path: Path) -> None:
    # Two workers; gw1's last item ends at 10, it ends its session at 13 (a slow teardown), the
    # controller at 13.5, and the command returns at 14.
    log = _log(
        tmp_path / "timeline.jsonl",
        [
            {"t": 1.0, "cpu": 0.4, "worker": "controller", "event": "node-collected"},
            {"t": 1.0, "cpu": 0.5, "worker": "gw0", "event": "collected"},
            {"t": 1.2, "cpu": 0.6, "worker": "gw1", "event": "collected"},
            {"t": 1.3, "cpu": 0.6, "worker": "gw0", "event": "start", "item": "a"},
            {"t": 1.3, "cpu": 0.6, "worker": "gw1", "event": "start", "item": "b"},
            {"t": 5.0, "cpu": 0.7, "worker": "gw0", "event": "finish", "item": "a"},
            {"t": 5.0, "cpu": 0.7, "worker": "gw0", "event": "start", "item": "c"},
            {"t": 6.0, "cpu": 0.7, "worker": "gw1", "event": "finish", "item": "b"},
            {"t": 6.0, "cpu": 0.7, "worker": "gw1", "event": "start", "item": "d"},
            {"t": 9.0, "cpu": 0.8, "worker": "gw0", "event": "finish", "item": "c"},
            {"t": 10.0, "cpu": 0.8, "worker": "gw1", "event": "finish", "item": "d"},
            {"t": 9.1, "cpu": 0.8, "worker": "gw0", "event": "unconfigured"},
            {"t": 13.0, "cpu": 0.9, "worker": "gw1", "event": "unconfigured"},
            {"t": 12.9, "cpu": 0.9, "worker": "controller", "event": "finishing"},
            {"t": 13.2, "cpu": 0.9, "worker": "controller", "event": "finished"},
            {"t": 13.5, "cpu": 0.9, "worker": "controller", "event": "unconfigured"},
        ],
    )
    phases = timeline.phases(log, began=0.0, ended=14.0)
    assert phases["boot_s"] == 1.2
    assert phases["first_round_s"] == 6.0
    assert phases["steady_item_s"] == 4.0
    assert phases["tail_s"] == 4.0
    assert phases["tail_workers_s"] == 3.0
    assert phases["tail_controller_s"] == 0.5
    assert phases["tail_exit_s"] == 0.5
    assert phases["workers_unended"] == 0.0
    assert phases["controller_finish_s"] == 0.3
    assert phases["controller_summary_s"] == 0.3
    # Had gw1 been killed before its note, its wait would be the controller's, and said so.
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    killed = [e for e in events if (e["worker"], e["event"]) != ("gw1", "unconfigured")]
    phases = timeline.phases(_log(tmp_path / "killed.jsonl", killed), began=0.0, ended=14.0)
    assert phases["workers_unended"] == 1.0
    assert phases["tail_workers_s"] == 0.0
    assert phases["tail_controller_s"] == 3.5


def test_a_real_run_notes_every_process_ending_its_session(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "timeline.jsonl"
    monkeypatch.setenv(timeline.ENV, str(log))
    pytester.makepyfile("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    pytester.runpytest_subprocess(
        "-p", "bench.timeline", "-p", "no:cacheprovider", "-n", "2"
    ).assert_outcomes(passed=2)
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    ended = sorted(event["worker"] for event in events if event["event"] == "unconfigured")
    assert ended == ["controller", "gw0", "gw1"]
    finishing = [(e["worker"], e["event"]) for e in events if "finish" in e["event"]]
    assert ("controller", "finishing") in finishing
    assert ("controller", "finished") in finishing
    phases = timeline.phases(log, began=min(event["t"] for event in events), ended=max(
        event["t"] for event in events
    ))  # fmt: skip
    parts = phases["tail_workers_s"] + phases["tail_controller_s"] + phases["tail_exit_s"]
    assert parts == pytest.approx(phases["tail_s"], abs=0.02)
    assert phases["tail_exit_s"] == 0.0  # the controller's note is the last line written
