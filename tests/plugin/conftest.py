"""Suite runs that several test modules compare, each run once per test run."""

from __future__ import annotations

from functools import partial

import pytest

from tests.support.roots import FAST_HOST, improving_root
from tests.support.shared import SharedRun, shared_run, shared_setup

# Three groups that each go fail-to-pass: enough for -n 2 and for three shards to split them.
# What these runs test is scheduling, sharding and merging, so they run on the fastest host.
three_groups = partial(improving_root, count=3, host=FAST_HOST)


@pytest.fixture(scope="session")
@shared_setup
def serial_run(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The three groups under `-n 0`."""
    return shared_run(tmp_path_factory, "three-serial", three_groups, "-n", "0")


@pytest.fixture(scope="session")
@shared_setup
def parallel_run(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The three groups under `-n 2` (verbose: each item's line names its worker)."""
    return shared_run(tmp_path_factory, "three-parallel", three_groups, "-n", "2", "-v")


@pytest.fixture(scope="session")
@shared_setup
def loadscope_run(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The three groups under `-n 2 --dist loadscope` (verbose)."""
    args = ("-n", "2", "--dist", "loadscope", "-v")
    return shared_run(tmp_path_factory, "three-loadscope", three_groups, *args)
