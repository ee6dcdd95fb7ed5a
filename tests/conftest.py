"""Shared fixtures for the project's tests (helpers live in `tests.support`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.support import every_host as every_host_run
from tests.support.paths import EXAMPLE
from tests.support.shared import SharedRun, is_shared_setup, shared_run, shared_setup

# No example may fail for being slow: on a loaded machine a deadline measures the machine.
settings.register_profile("skill-eval", deadline=None)
settings.load_profile("skill-eval")

# The nested runs the tests start inherit this environment: on a CI job page they would append
# their summaries to the project's own. The tests that want one set it themselves.
os.environ.pop("GITHUB_STEP_SUMMARY", None)
# Pi's bundle and the warm compile caches are built once per key in the evaluator's cache
# directory; pytester gives every nested run a HOME of its own, which would rebuild them each time.
os.environ.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))


def _copy_example(root: Path) -> Path:
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".skill-eval"))
    return root


@pytest.fixture
def example_root(tmp_path: Path) -> Path:
    """A private copy of the example suite (results are written under its root)."""
    return _copy_example(tmp_path / "example")


@pytest.fixture(scope="session")
@shared_setup
def example_run(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The example suite run once for the test run (real Pi, scripted model, `-v`); read only."""
    return shared_run(tmp_path_factory, "example", _copy_example, "-v")


@pytest.fixture(scope="session")
@shared_setup
def every_host(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The example suite and a third group on every registered host; read only
    (tests.support.every_host)."""
    make, args = every_host_run.make_root, every_host_run.args()
    return shared_run(tmp_path_factory, "every-host", make, *args)


def _order(item: pytest.Item, seen: set[tuple[str, str]]) -> int:
    """0: a shared setup's first user; 1: other host-starting tests; 2: its later users; 3: rest."""
    if item.get_closest_marker("pi") is None:
        return 3
    info = getattr(item, "_fixtureinfo", None)
    shared = set()
    for name, definitions in info.name2fixturedefs.items() if info else ():
        if definitions and is_shared_setup(definitions[-1].func):
            shared.add((definitions[-1].baseid, name))
    fresh = shared - seen
    seen |= shared
    return 0 if fresh else 2 if shared else 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Host-starting tests first, the quick rest last: under -n no long test ends the run.

    Each shared setup (tests.support.shared) is built by its first user while the other
    host-starting tests run; its other users come after them and find it done.
    """
    seen: set[tuple[str, str]] = set()
    ranks = {id(item): _order(item, seen) for item in items}
    items.sort(key=lambda item: ranks[id(item)])


@pytest.hookimpl(trylast=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under -n, an idle worker takes half of the busiest one's queue (xdist's worksteal).

    Stock `load` hands each worker a fixed block of consecutive tests up front, so the block
    that holds most host-starting tests ends the run alone while the other worker idles.
    """
    from xdist.scheduler import WorkStealingScheduling  # type: ignore[import-untyped]

    return WorkStealingScheduling(config, log)
