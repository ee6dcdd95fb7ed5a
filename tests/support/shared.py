"""An expensive setup built once per test run, however xdist spreads the tests that read it.

xdist's load scheduler deals neighbouring tests to different workers, so a module- or
session-scoped fixture is built once per worker: a nested suite run twice for nothing. `once`
builds it in the directory every worker of the run shares, under a file lock; the first worker
to ask builds it, the others wait and read what it left (the pattern pytest-xdist documents for
session fixtures that must run once).
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.support.runs import run_detached


def once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The directory `build` filled for `name` in this test run; built by the first caller.

    Tests read the directory and write only below new names of their own, so that every test
    sees what `build` left. A build that failed is retried by the next caller (and fails there
    too), never read as done.
    """
    __tracebackhide__ = True
    shared = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the controller's base, the same for every worker
    directory, done = shared / f"shared-{name}", shared / f"shared-{name}.done"
    with (shared / f"shared-{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            build(directory)
            done.touch()
    return directory


def once_value(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]) -> Any:
    """Like `once`, for a setup that also returns a value (picklable) the tests read.

    `build` fills the directory it is given and returns the value; every caller gets a copy.
    """
    __tracebackhide__ = True

    def store(directory: Path) -> None:
        value = build(directory / "setup")
        (directory / "value.pickle").write_bytes(pickle.dumps(value))

    directory = once(factory, name, store)
    return pickle.loads((directory / "value.pickle").read_bytes())


@dataclass(frozen=True)
class SharedRun:
    """A suite run that several tests read: its definition root, JUnit file and output."""

    root: Path
    junit: Path
    stdout: str


def shared_run(
    factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Path], *args: str
) -> SharedRun:
    """The suite `make` writes, run once per test run with `args` (it must pass) and JUnit."""
    __tracebackhide__ = True

    def build(directory: Path) -> None:
        root = make(directory / "root")
        done = run_detached(root, *args, f"--junitxml={directory / 'junit.xml'}")
        (directory / "stdout.txt").write_text(done.stdout, encoding="utf-8")
        assert done.returncode == 0, done.stdout + done.stderr

    directory = once(factory, name, build)
    stdout = (directory / "stdout.txt").read_text(encoding="utf-8")
    return SharedRun(directory / "root", directory / "junit.xml", stdout)


F = TypeVar("F", bound=Callable[..., object])


def shared_setup(function: F) -> F:
    """Mark a fixture built with `once` (under `@pytest.fixture`): its first user runs early.

    The tests' conftest starts the first test needing each such fixture before the other
    host-starting tests and its other users after them, so that no xdist worker waits on
    the lock while another builds.
    """
    __tracebackhide__ = True
    function.shared_setup = True  # type: ignore[attr-defined]
    return function


def shared_pi_run(name: str, build: Callable[[Any, Path], Any]) -> Any:
    """A module-scoped fixture (`shared_setup`): the run `build(pi_launcher, directory)` makes,
    built once per test run under `name`: one Pi start, not one per worker."""

    @pytest.fixture(scope="module")
    @shared_setup
    def run(pi_launcher: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
        return once_value(tmp_path_factory, name, partial(build, pi_launcher))

    return run


def is_shared_setup(function: object) -> bool:
    """Whether `function` is a fixture marked with `shared_setup`."""
    __tracebackhide__ = True
    return getattr(function, "shared_setup", False) is True
