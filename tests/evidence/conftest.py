"""A sealed result without a host, with a verified-results cache of its own, and a record of
each result `skill-eval verify`'s code reads in full."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.definitions import load_definition
from pytest_skill_eval.evidence.summary import write_invocation, write_summary
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.run import GroupRun
from pytest_skill_eval.run.variant import run_variant
from tests.support.cancelled import cancelled_environment
from tests.support.roots import body_group, make_root
from tests.support.verifications import record_verifications

RESULT = "20260101000002-01234567"


@pytest.fixture
def result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished, sealed result (its runs cancelled: no host), and a cache of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = make_root(tmp_path / "root", [body_group("answer")], {})
    loaded = load_definition(root / "suite.json", root, registered())
    result_dir = tmp_path / "runs" / RESULT
    result_dir.mkdir(parents=True)
    write_invocation(result_dir, {"schema_version": 1, "id": RESULT})
    env = cancelled_environment(root)
    run = GroupRun(loaded.groups[0], lambda trial: result_dir, 1)
    for name in ("baseline", "candidate"):
        run_variant(run, name, env)
    run.finalise(env)
    write_summary(result_dir, 1)
    return result_dir


@pytest.fixture
def verifications(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each result `skill-eval verify`'s code reads in full, in order."""
    return record_verifications(monkeypatch)
