"""Requests the loopback server saw, given to the turn during which they arrived."""

from __future__ import annotations

from pytest_skill_eval.hosts.context_records import turn_of_requests


def test_each_request_belongs_to_the_turn_it_arrived_in() -> None:
    # Turn 1 ended after 2 requests, turn 2 after 3; the rest came in turn 3, which never ended.
    assert turn_of_requests(5, [(1, 2), (2, 3)]) == [1, 1, 2, 3, 3]
    assert turn_of_requests(2, []) == [1, 1]
    assert turn_of_requests(0, [(1, 0)]) == []
