"""The host registry: one registration per host, and what each declares holds."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skill_eval.hosts import UnknownHostError, host_for
from pytest_skill_eval.hosts.registration import load
from pytest_skill_eval.hosts.registry import REGISTERED, names, registration_for
from pytest_skill_eval.modelserver.tools import NEUTRAL_BY_NAME
from pytest_skill_eval.modelserver.wire import SERVED_APIS

ROOT = Path(__file__).resolve().parents[2]


def test_each_host_is_registered_once_under_its_own_name() -> None:
    assert len(set(names())) == len(REGISTERED)
    assert len({r.binary_option for r in REGISTERED}) == len(REGISTERED)
    for registration in REGISTERED:
        assert registration_for(registration.name) is registration
        host = host_for(registration.name)
        assert host.registration is registration


def test_an_unknown_host_names_the_registered_ones() -> None:
    with pytest.raises(
        UnknownHostError, match=re.escape("unknown runtime.host 'cursor'; known: pi, ")
    ):
        registration_for("cursor")


def test_each_registration_pins_the_package_the_project_installs() -> None:
    manifest = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    pinned = manifest["dependencies"] | manifest.get("optionalDependencies", {})
    for registration in REGISTERED:
        assert pinned[registration.package] == registration.version, registration.name
        assert registration.binary.startswith("node_modules/")


def test_each_registration_speaks_a_served_api_and_shows_only_neutral_tools() -> None:
    for registration in REGISTERED:
        assert registration.apis
        assert set(registration.apis) <= set(SERVED_APIS)
        dialect = registration.tools
        assert set(dialect.shown) | set(dialect.hidden) == set(NEUTRAL_BY_NAME)
        assert not set(dialect.shown) & set(dialect.hidden)
        assert set(registration.unobservable) <= set(NEUTRAL_BY_NAME)
        for reference in (registration.render, registration.check, registration.price_source):
            assert callable(load(reference)), reference


def test_a_reference_that_is_not_module_colon_attribute_is_refused() -> None:
    with pytest.raises(
        ValueError, match=re.escape("'hosts.pi' is not a 'module:attribute' reference")
    ):
        load("hosts.pi")


def test_the_registry_imports_no_host_implementation_and_no_model_server() -> None:
    """Reading what hosts exist costs no import of what runs them (in a fresh interpreter,
    where a circular import would fail too)."""
    code = (
        "import sys, pytest_skill_eval.hosts.registry; "
        "print('\\n'.join(m for m in sys.modules if m.startswith('pytest_skill_eval')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    heavy = {"pytest_skill_eval.hosts.base", "pytest_skill_eval.modelserver.server"}
    heavy |= {f"pytest_skill_eval.hosts.{h}.host" for h in ("pi", "claude_code", "codex")}
    assert "pytest_skill_eval.hosts.registry" in loaded
    assert not loaded & heavy
    assert not any(m.startswith("pytest_skill_eval.definitions") for m in loaded)
