"""The group scheduler: a group's variants on one worker, the next group only when needed."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_skill_eval.xdist import group_scheduling, worker_count

IDS = [f"suite.json::g{k}[{variant}]" for k in range(4) for variant in ("baseline", "candidate")]


class _Worker:
    """What the scheduler uses of xdist's WorkerController."""

    def __init__(self, name: str) -> None:
        self.gateway = type("Gateway", (), {"id": name})()
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices

    def shutdown(self) -> None:
        self.shutting_down = True


def _scheduler(pytester: pytest.Pytester) -> tuple[Any, _Worker, _Worker]:
    config = pytester.parseconfig("-p", "xdist", "--tx", "2*popen")
    scheduler = group_scheduling()(config, None)
    first, second = _Worker("gw0"), _Worker("gw1")
    for worker in (first, second):
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, IDS)
    scheduler.schedule()
    return scheduler, first, second


def test_a_worker_gets_one_group_first_and_the_next_only_on_its_last_test(
    pytester: pytest.Pytester,
) -> None:
    scheduler, first, second = _scheduler(pytester)
    # One group each, both variants together (stock loadscope handed out all four here).
    assert [IDS[i] for i in first.sent] == IDS[0:2]
    assert [IDS[i] for i in second.sent] == IDS[2:4]
    # The first worker's baseline is done: on its last test, it gets the next group.
    scheduler.mark_test_complete(first, 0)
    assert [IDS[i] for i in first.sent] == IDS[0:2] + IDS[4:6]
    assert second.sent == [2, 3]  # nothing more for a worker still on its first test
    scheduler.mark_test_complete(first, 1)
    assert len(first.sent) == 4  # two tests still to go there: no third group yet
    scheduler.mark_test_complete(second, 2)
    assert [IDS[i] for i in second.sent] == IDS[2:4] + IDS[6:8]
    # Nothing left to hand out: a worker whose tests run out is shut down.
    for worker, index in ((first, 4), (first, 5), (second, 3), (second, 6), (second, 7)):
        scheduler.mark_test_complete(worker, index)
    assert first.shutting_down
    assert second.shutting_down
    assert scheduler.tests_finished


def test_a_run_counts_its_workers_from_xdist_and_one_when_serial(
    pytester: pytest.Pytester,
) -> None:
    config = pytester.parseconfig()
    assert worker_count(config) == 1
    config.workerinput = {"workerid": "gw0", "workercount": 8}  # type: ignore[attr-defined]
    assert worker_count(config) == 8
