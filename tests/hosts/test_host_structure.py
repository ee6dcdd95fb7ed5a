"""What keeps hosts apart: each registration's modules sit in its own subpackage, and no code
outside `hosts/pi/` decides anything by the name "pi"."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import pytest_skill_eval
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.hosts.registration import SHARED_PRICE_SOURCE, HostRegistration, load
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.nodeids import DEFAULT_HOST

PACKAGE = Path(pytest_skill_eval.__file__).parent
# Modules outside hosts/pi/ that may spell "pi", each with why.
PI_NAMED = {
    "nodeids.py": "the ground names the default host (the first registered; a test checks it)",
    "commands/review.py": "the advisory review is a Pi agent, and records that Pi's version",
    "views/html_run.py": "results written before `binary` kept Pi's binary under `pi`",
}


@pytest.mark.parametrize("registration", registered(), ids=lambda r: r.name)
def test_a_registrations_modules_sit_in_its_own_subpackage(registration: HostRegistration) -> None:
    subpackage = registration.subpackage
    assert subpackage == f"pytest_skill_eval.hosts.{registration.name.replace('-', '_')}"
    declared = importlib.import_module(f"{subpackage}.registration")
    assert registration in vars(declared).values()
    for reference in (registration.host, registration.check, registration.render):
        assert reference.startswith(f"{subpackage}."), reference
        assert callable(load(reference)), reference
    source = registration.price_source
    assert source == SHARED_PRICE_SOURCE or source.startswith(f"{subpackage}."), source


def test_no_module_outside_hosts_pi_decides_by_the_name_pi() -> None:
    named: dict[str, list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("hosts/pi/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lines = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value == "pi"
        ]
        if lines:
            named[relative] = lines
    assert set(named) <= set(PI_NAMED), named


def test_the_evidence_default_host_is_the_registrys() -> None:
    assert layout.DEFAULT_HOST == DEFAULT_HOST
