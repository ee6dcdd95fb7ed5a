"""Registering a host in-process for a test: the registry as every consumer reads it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pytest_skill_eval.hosts import registry
from pytest_skill_eval.hosts.registration import HostRegistration


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
