"""`runtime.host` names a registered host: the registry its loader's caller passes, not a list in
the definitions."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from pytest_skill_eval.definitions.models import DEFAULT_RUNTIME, HOSTS, Runtime
from pytest_skill_eval.hosts.registry import names, registered, registration_for
from tests.support.registry import register


def _runtime(host: str) -> Runtime:
    document = DEFAULT_RUNTIME.model_dump() | {"host": host}
    return Runtime.model_validate(document, context={HOSTS: registered()})


def test_a_registered_host_is_a_runtime_host(monkeypatch: pytest.MonkeyPatch) -> None:
    last = names()[-1]
    with pytest.raises(ValidationError, match=f"must be 'pi', .* or '{last}'"):
        _runtime("newhost")
    register(monkeypatch, dataclasses.replace(registration_for("codex"), name="newhost"))
    assert _runtime("newhost").host == "newhost"
    with pytest.raises(ValidationError, match=f"'{last}' or 'newhost'"):
        _runtime("cursor")
