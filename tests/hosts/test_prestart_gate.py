"""The prompt gate and the pre-start's life cycle, without a host (fakes for prepare and run)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_skill_eval.definitions.loader import parse_group
from pytest_skill_eval.hosts import startup
from pytest_skill_eval.hosts.base import Endpoint, PromptGate
from pytest_skill_eval.hosts.codex.binary import CodexBinary
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.hosts.subject import SubjectResult
from pytest_skill_eval.run import prestart
from pytest_skill_eval.run.prestart import Prestart
from pytest_skill_eval.workspace.materialise import PreparedVariant
from tests.support.roots import Group, runtime, variant


def test_an_open_gate_runs_its_callbacks_at_once_and_a_spawn_is_the_prompt() -> None:
    gate = PromptGate()
    seen: list[str] = []
    gate.when_open(seen.append, "now")
    assert seen == ["now"]
    gate.spawned()
    assert gate.timing()["promptedAt"] == gate.timing()["spawnedAt"] is not None
    assert gate.opened_at is None


def test_a_prompt_sent_after_the_spawn_is_dated_only_once_it_went_out() -> None:
    gate = PromptGate()
    gate.deferred = True  # the prompt goes over stdin, after set-up
    gate.spawned()
    assert gate.timing()["spawnedAt"] is not None
    assert gate.timing()["promptedAt"] is None  # never went out: no time is made up for it
    gate.prompting()
    assert gate.timing()["promptedAt"] is not None


def test_a_held_gate_defers_its_callbacks_until_it_opens() -> None:
    gate = PromptGate(held=True)
    seen: list[str] = []
    gate.when_open(seen.append, "later")
    assert seen == []
    assert gate.open() is True
    assert seen == ["later"]
    assert gate.opened_at is not None
    assert gate.abort() is False  # a run that began cannot be called off
    assert not gate.aborted


def test_an_aborted_gate_never_opens_nor_calls_back() -> None:
    gate = PromptGate(held=True)
    seen: list[str] = []
    gate.when_open(seen.append, "never")
    assert gate.abort() is True
    assert gate.open() is False
    gate.when_open(seen.append, "never either")
    assert seen == []
    assert gate.aborted


def test_a_held_host_frees_its_start_up_slot_once_it_waits_at_the_gate() -> None:
    gate = PromptGate(held=True)
    assert gate.ready(None) is None  # no way to tell: no slot is taken
    ready = gate.ready(lambda: 0)
    assert ready is not None
    assert ready() == 0
    gate.waiting = True
    assert ready() == 1


class _Host:
    """A fake held host: waits at the gate, prompts when it opens, stops when aborted."""

    def __init__(self) -> None:
        self.waiting = threading.Event()

    def __call__(self, prepared: PreparedVariant, gate: PromptGate) -> SubjectResult:
        gate.spawned()
        gate.waiting = True
        self.waiting.set()
        while not gate.wait(0.01):
            pass
        if not gate.aborted:
            gate.prompting()
        return SubjectResult({"state": "complete"}, [], "done")


def _prestart(directory: Path, host: _Host, may_begin: Any = lambda: True) -> Prestart:
    def prepare() -> PreparedVariant:
        (directory / "workspace").mkdir(parents=True)
        pre.created = True
        (directory / "workspace" / "locked").mkdir()
        (directory / "workspace" / "locked").chmod(0o500)  # materialised modes are kept
        return cast(PreparedVariant, object())

    pre = Prestart(
        directory=directory, may_begin=may_begin, cancelled=lambda: False, prepare=prepare, run=host
    )
    return pre.start()


def test_a_claimed_pre_start_is_the_run(tmp_path: Path) -> None:
    host = _Host()
    pre = _prestart(tmp_path / "candidate", host)
    assert host.waiting.wait(10)
    assert pre.spawned
    claimed = pre.claim()
    assert claimed is not None
    assert cast(SubjectResult, claimed[1]).response == "done"
    assert (tmp_path / "candidate" / "workspace").is_dir()


def test_a_discarded_pre_start_leaves_no_directory(tmp_path: Path) -> None:
    host = _Host()
    pre = _prestart(tmp_path / "candidate", host)
    assert host.waiting.wait(10)
    pre.discard()
    assert pre.gate.aborted
    assert pre.gate.prompted_at is None
    assert not (tmp_path / "candidate").exists()


def test_a_baseline_that_never_reaches_the_model_starts_nothing(tmp_path: Path) -> None:
    host = _Host()
    pre = _prestart(tmp_path / "candidate", host, may_begin=lambda: False)
    pre.running_done.set()
    assert pre.claim() is None
    assert not pre.spawned
    assert not (tmp_path / "candidate").exists()


def test_a_run_with_a_core_to_spare_pre_starts_before_its_running_subject_reaches_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(startup.SLOTS_ENV, "2")
    host = _Host()
    pre = _prestart(tmp_path / "candidate", host, may_begin=prestart.begins(lambda: 0, workers=1))
    assert host.waiting.wait(10)  # spawned and held though nothing reached the model
    assert pre.claim() is not None


def test_workers_that_fill_the_start_up_slots_pre_start_only_once_the_model_is_reached(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests = [0]
    monkeypatch.setenv(startup.SLOTS_ENV, "2")
    begins = prestart.begins(lambda: requests[0], workers=2)
    assert not begins()
    requests[0] = 1
    assert begins()
    monkeypatch.setenv(startup.SLOTS_ENV, "0")  # no slots: no spare core is known
    assert not prestart.begins(lambda: 0, workers=1)()


def test_a_pre_start_that_never_prompted_is_not_a_run(tmp_path: Path) -> None:
    def failing(prepared: PreparedVariant, gate: PromptGate) -> SubjectResult:
        gate.spawned()
        raise RuntimeError("the host died while starting")

    directory = tmp_path / "candidate"

    def prepare() -> PreparedVariant:
        directory.mkdir()
        pre.created = True
        return cast(PreparedVariant, object())

    pre = Prestart(
        directory=directory,
        may_begin=lambda: True,
        cancelled=lambda: False,
        prepare=prepare,
        run=failing,
    )
    pre.start()
    assert pre.claim() is None  # the variant then runs as usual, from nothing
    assert not directory.exists()


@pytest.fixture(autouse=True)
def _writable(tmp_path: Path) -> Any:
    """Read-only directories a test leaves behind are made removable again."""
    yield
    for path in tmp_path.rglob("*"):
        if path.is_dir():
            path.chmod(0o700)


def test_a_pre_start_never_removes_a_directory_it_did_not_create(tmp_path: Path) -> None:
    directory = tmp_path / "baseline"
    (directory / "kept").mkdir(parents=True)  # there before it: another run's, or carried over

    def prepare() -> PreparedVariant:
        directory.mkdir()  # fails: the directory exists
        pre.created = True
        return cast(PreparedVariant, object())

    pre = Prestart(
        directory=directory, may_begin=lambda: True, cancelled=lambda: False, prepare=prepare,
        run=_Host(),
    )  # fmt: skip
    pre.start()
    pre.discard()
    assert pre.unused
    assert (directory / "kept").is_dir()


def _codex_group(tmp_path: Path) -> Any:
    """A two-turn Codex group that reads and writes: one pre-start could hold."""

    definition = Group(
        id="held",
        turns=["Read.", "Write."],
        tools=["read", "write"],
        fixture=None,
        runtime=runtime(host="codex"),
        candidate=variant(),
    ).definition()
    return parse_group(definition, tmp_path / "group.json", registered())


@pytest.mark.parametrize(("bwrap", "held"), [(Path("/usr/bin/bwrap"), True), (None, False)])
def test_a_codex_candidate_is_pre_started_only_where_its_reads_are_confined(
    tmp_path: Path, bwrap: Path | None, held: bool
) -> None:
    # Unconfined (no bwrap could run), the baseline's shell could list the candidate's
    # directory as the pre-start makes it.
    binary = CodexBinary(Path("/bin/codex"), "0.171.0", bwrap)
    baseline = Endpoint(mode="scripted", model=None, received=lambda: 0)
    group = _codex_group(tmp_path)
    assert prestart.applies(group, baseline, lambda name: binary) is held
