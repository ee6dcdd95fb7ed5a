"""A controller hands every binary it checked to its workers, whatever the host: a worker adopts
them instead of locating and version-checking each again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval import hosts
from pytest_skill_eval.hosts import checked_binary
from pytest_skill_eval.hosts.options import HostOptions
from pytest_skill_eval.hosts.registration import HostRegistration, load
from pytest_skill_eval.hosts.registry import names, registration_for


def _record(registration: HostRegistration) -> dict[str, Any]:
    """What a controller's check of this host could hand over (every host's keys at once)."""
    return {
        "path": f"/opt/{registration.command}",
        "version": registration.version,
        "runtime": None,
        "entry": None,
        "bundle": None,
        "bwrap": "/usr/bin/bwrap",
        "executable": f"/opt/{registration.command}-native",
        "launcher_env": [["CODEX_MANAGED_BY_NPM", "1"]],
    }


@pytest.mark.parametrize("name", names())
def test_a_worker_adopts_the_binary_its_controller_checked(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    registration = registration_for(name)
    binary = load(f"{registration.subpackage}.binary:from_handover")(_record(registration))
    monkeypatch.setattr(hosts, "_CHECKED", {name: ((HostOptions(), tmp_path), binary)})
    handed = hosts.handover()
    assert set(handed) == {name}

    def refuse(*_args: object) -> None:
        raise AssertionError("a worker checked a binary its controller handed over")

    monkeypatch.setattr(hosts, "_CHECKED", {})
    monkeypatch.setattr(HostRegistration, "check_binary", refuse)
    hosts.adopt(handed)
    assert checked_binary(name, HostOptions(), tmp_path) == binary
