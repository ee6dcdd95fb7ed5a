"""The benchmarks' nested sessions: what they leave alone."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import pytest

from bench.common import body_suite, run_suite

pytestmark = pytest.mark.pi


def test_a_timed_session_never_removes_what_earlier_pytest_runs_left(tmp_path: Path) -> None:
    # pytest's shared temporary root as an earlier test run left it: five numbered directories.
    temproot = tmp_path / "temproot"
    earlier = [temproot / f"pytest-of-{getpass.getuser()}" / f"pytest-{n}" for n in range(1, 6)]
    for directory in earlier:
        (directory / "left-by-an-earlier-run").mkdir(parents=True)
    root = body_suite(tmp_path / "suite", 2, 1, 0)
    run_suite(root, "-n", "2", env={**os.environ, "PYTEST_DEBUG_TEMPROOT": str(temproot)})
    # An xdist session numbering its own there deletes all but the newest few as it ends.
    assert all(directory.is_dir() for directory in earlier)
