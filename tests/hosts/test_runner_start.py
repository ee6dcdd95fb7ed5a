"""Subject start-up failures and a second Ctrl-C, without the real Pi (stand-ins only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skill_eval.definitions import Group as GroupModel
from pytest_skill_eval.definitions.loader import parse_group
from pytest_skill_eval.hosts.pi.binary import PiBinary
from pytest_skill_eval.hosts.process import CancelToken
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.hosts.subject import Endpoint, run_subject
from pytest_skill_eval.workspace import SourceResolver
from pytest_skill_eval.workspace.materialise import PreparedVariant, prepare_group, prepare_variant
from tests.support.processes import DEATH_S, dead, wait_for
from tests.support.roots import Group, variant


def test_a_pi_that_cannot_start_is_an_infrastructure_failure_on_record(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    definition = Group(
        id="no-pi", turns=["Hello."], tools=["read"], fixture=None, candidate=variant()
    ).definition()
    group = parse_group(definition, root / "group.json", registered())
    group_dir = tmp_path / "result" / "groups" / "no-pi"
    resources = prepare_group(group, root, group_dir)
    prepared = prepare_variant(
        group, "candidate", root, group_dir / "candidate", resources, SourceResolver(root)
    )
    closed: list[bool] = []
    endpoint = Endpoint(
        mode="scripted", model=None, requests=list, close=lambda: closed.append(True)
    )
    missing = tmp_path / "missing" / "pi"

    result = run_subject(
        group=group,
        prepared=prepared,
        binary=PiBinary(missing, "0.73.1"),
        endpoint=endpoint,
        cancel=CancelToken(),
    )

    run = result.run
    assert run["state"] == "infrastructure-failed"
    assert run["turns"] == []
    assert run["process"]["terminationReason"] == "process-error"
    [error] = run["process"]["protocolErrors"] or []
    assert error["reason"] == "process-error"
    assert str(missing) in str(error["message"])
    assert run["artifacts"]["events"] is None  # nothing was ever read from Pi
    assert run["artifacts"]["modelRequests"] == "model-requests.jsonl"
    assert (prepared.directory / "model-requests.jsonl").read_bytes() == b""
    effects = run["effects"]
    assert effects is not None
    assert effects["changes"] == {"created": [], "modified": [], "deleted": []}
    assert closed == [True]
    json.dumps(run)  # the record is JSON as it stands


class _FailOnceStarted(CancelToken):
    """Raises `error` from the conversation loop once the stand-in subject recorded its pids."""

    def __init__(self, pidfile: Path, error: BaseException) -> None:
        super().__init__()
        self.pidfile = pidfile
        self.error = error

    @property
    def cancelled(self) -> bool:
        """Fail as soon as the stand-in subject is up."""
        if self.pidfile.is_file() and self.pidfile.read_text(encoding="utf-8").strip():
            raise self.error
        return False


def _stuck_subject(tmp_path: Path) -> tuple[GroupModel, PreparedVariant, PiBinary, Path]:
    """A body group and a stand-in Pi that ignores SIGTERM, never answers, and has a child."""
    root = tmp_path / "root"
    root.mkdir()
    pidfile = tmp_path / "pid"
    fake = tmp_path / "fake-pi"
    fake.write_text(
        f"#!/bin/sh\ntrap '' TERM\nsleep 60 &\necho $$ $! > {pidfile}\nwait\n", encoding="utf-8"
    )
    fake.chmod(0o755)
    definition = Group(
        id="stuck", turns=["Hello."], tools=["read"], fixture=None, candidate=variant()
    ).definition()
    group = parse_group(definition, root / "group.json", registered())
    group_dir = tmp_path / "result" / "groups" / "stuck"
    resources = prepare_group(group, root, group_dir)
    prepared = prepare_variant(
        group, "candidate", root, group_dir / "candidate", resources, SourceResolver(root)
    )
    return group, prepared, PiBinary(fake, "0.73.1"), pidfile


def _wait_gone(pidfile: Path) -> None:
    """Wait until the stand-in and its child have both died (a killed process dies when the
    kernel next runs it); the test fails if they live on."""
    pids = [int(p) for p in pidfile.read_text(encoding="utf-8").split()]
    assert len(pids) == 2
    wait_for(lambda: all(dead(pid) for pid in pids), "the subject to die", DEATH_S)


def test_a_second_ctrl_c_stops_at_once_and_leaves_no_subject_behind(tmp_path: Path) -> None:
    group, prepared, pi, pidfile = _stuck_subject(tmp_path)

    with pytest.raises(KeyboardInterrupt):
        run_subject(
            group=group,
            prepared=prepared,
            binary=pi,
            endpoint=Endpoint(mode="scripted", model=None, requests=list),
            cancel=_FailOnceStarted(pidfile, KeyboardInterrupt()),
        )

    _wait_gone(pidfile)


def test_an_unforeseen_failure_keeps_the_run_and_stops_the_subject(tmp_path: Path) -> None:
    group, prepared, pi, pidfile = _stuck_subject(tmp_path)

    result = run_subject(
        group=group,
        prepared=prepared,
        binary=pi,
        endpoint=Endpoint(mode="scripted", model=None, requests=list),
        cancel=_FailOnceStarted(pidfile, RuntimeError("boom")),
    )

    _wait_gone(pidfile)
    run = result.run
    assert run["state"] == "infrastructure-failed"
    assert run["process"]["terminationReason"] == "process-error"
    assert run["process"]["signal"] == "SIGKILL"
    assert run["process"]["protocolErrors"] == [
        {"reason": "process-error", "message": "RuntimeError: boom"}
    ]
    assert run["artifacts"]["events"] == "events.jsonl"
    # It failed while configuring Pi, before any prompt: delivery never became available.
    assert run["delivery"] == {"kind": "unavailable", "turn": 1, "targetPath": None}
