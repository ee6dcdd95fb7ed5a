"""Registering a host in-process for a test: the registry as every consumer reads it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts import registry
from pytest_skill_eval.hosts.registration import HostRegistration
from pytest_skill_eval.nodeids import DEFAULT_HOST
from tests.support import runs


def register(monkeypatch: pytest.MonkeyPatch, added: HostRegistration) -> None:
    """`added` in the registry for this test: it replaces the host of its name, else is added
    last."""
    kept = tuple(r for r in registry.REGISTERED if r.name != added.name)
    replaced = any(r.name == added.name for r in registry.REGISTERED)
    listed = tuple(added if r.name == added.name else r for r in registry.REGISTERED)
    monkeypatch.setattr(registry, "REGISTERED", listed if replaced else (*kept, added))


def changed(monkeypatch: pytest.MonkeyPatch, name: str, **changes: Any) -> HostRegistration:
    """Host `name`'s registration with `changes`, registered for this test."""
    registration = dataclasses.replace(registry.registration_for(name), **changes)
    register(monkeypatch, registration)
    return registration


# The marker of each host whose binary a test run may lack (Pi's tests carry `pi` themselves).
HOST_MARKS = {
    "claude-code": pytest.mark.claude,
    "codex": pytest.mark.codex,
    "gemini-cli": pytest.mark.gemini,
}


def host_params() -> list[Any]:
    """Every registered host as a `pytest.param` named by the host, with its binary's marker."""
    return [
        pytest.param(r, marks=[HOST_MARKS[r.name]] if r.name in HOST_MARKS else [], id=r.name)
        for r in registry.registered()
    ]


def run_on_host(pytester: pytest.Pytester, root: Path, host: str, *extra: str) -> Any:
    """Run the suite at `root` offline on `host` alone (no Pi binary asked for elsewhere)."""
    args = ["--skill-eval-host", host]
    if host != DEFAULT_HOST:
        args += ["--skill-eval-pi", str(root.parent / "no-such-pi")]
    return runs.run(pytester, root, *extra, *args)
