"""`bench.parallel`: the caps a `-n 8` run is set against, and the host's own work in a subject."""

from __future__ import annotations

import pytest

from bench.parallel import efficiency_caps, host_run_s


def test_the_host_run_is_each_conversation_less_its_first_request_and_its_model_waits() -> None:
    conversations = [(6.40, 0.5), (6.52, 0.6), (6.44, 0.5)]
    firsts = [0.30, 0.34, 0.32]  # each run's own: 0.10, 0.18 and 0.12 s left over
    assert host_run_s(conversations, firsts, 6.0) == pytest.approx(0.12)
    # A run measured faster than its parts counts no host work, and the pairs must match.
    assert host_run_s([(6.1, 0.5)], [0.3], 6.0) == 0.0
    with pytest.raises(ValueError, match="shorter"):
        host_run_s(conversations, firsts[:2], 6.0)


def test_the_second_cap_adds_each_workers_host_runs_to_the_least_wall() -> None:
    # 24 s of model waits per worker, 9 s of front CPU on two cores, four subjects of 0.1 s.
    cap, with_host_run = efficiency_caps(24.0, 24.0, 9.0 / 2, 4 * 0.1)
    assert cap == pytest.approx(24.0 / 28.5)
    assert with_host_run == pytest.approx(24.0 / 28.9)
    # With no host work after the start the two are one.
    assert efficiency_caps(24.0, 24.0, 4.5, 0.0) == (cap, cap)
