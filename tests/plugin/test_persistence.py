"""Evidence survives a failure at every persistence step (failures injected in-process; the
subjects run on the fastest host, since persisting never depends on it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pytest_skill_eval.evidence.store as evidence_module
from pytest_skill_eval.definitions import load_definition
from pytest_skill_eval.evidence import EvidenceError
from pytest_skill_eval.hosts import checked_binary
from pytest_skill_eval.hosts.options import HostOptions
from pytest_skill_eval.hosts.process import CancelToken
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.run import Environment, GroupRun
from pytest_skill_eval.run.providers import EndpointFactory
from pytest_skill_eval.run.variant import run_variant
from pytest_skill_eval.workspace import SourceResolver
from tests.support.files import read_json
from tests.support.roots import FAST_HOST, answers_root

pytestmark = [pytest.mark.pi, pytest.mark.codex]


@pytest.fixture(scope="module")
def pi() -> Any:
    """The checked binary of the host the subjects run on."""
    return checked_binary(FAST_HOST, HostOptions(), Path.cwd())


def _group_run(tmp_path: Path, pi: Any) -> tuple[GroupRun, Environment, EndpointFactory]:
    root = answers_root(tmp_path / "root", {"answer/baseline": "no", "answer/candidate": "yes"})
    loaded = load_definition(root / "suite.json", root, registered())
    result = tmp_path / "result"
    result.mkdir()
    endpoints = EndpointFactory(cassettes=root / "scripts", record="none", auth=None, models=None)
    env = Environment(
        root=root,
        resolver=SourceResolver(root),
        cancel=CancelToken(),
        binary=lambda _host: pi,
        endpoint=endpoints.endpoint,
        no_progress_s=600,
    )
    return GroupRun(loaded.groups[0], lambda trial: result, 1), env, endpoints


def _failing(name: str, variant: str | None = None) -> Callable[..., str]:
    real = evidence_module.write_once

    def write_once(path: Path, data: bytes) -> str:
        if path.name == name and (variant is None or path.parent.name == variant):
            raise EvidenceError(f"injected failure writing {path}")
        return real(path, data)

    return write_once


def _inject(monkeypatch: pytest.MonkeyPatch, write_once: Callable[..., str]) -> None:
    # Every evidence file, the group runner's included, is written through `store.write_once`.
    monkeypatch.setattr(evidence_module, "write_once", write_once)


def _run_both(run: GroupRun, env: Environment) -> dict[str, Any]:
    run_variant(run, "baseline", env)
    run_variant(run, "candidate", env)
    return run.finalise(env)


@pytest.mark.parametrize("name", ["transcript.json", "final.md"])
def test_a_failed_artifact_keeps_the_run_with_its_transcript_inline(
    tmp_path: Path, pi: Any, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    run, env, endpoints = _group_run(tmp_path, pi)
    _inject(monkeypatch, _failing(name, "candidate"))
    try:
        outcome = _run_both(run, env)
    finally:
        endpoints.close()
    cand = run.group_dir / "candidate"
    record = read_json(cand / "run.json")
    assert record["state"] == "infrastructure-failed"
    assert record["error"]["kind"] == "persistence"
    assert name in record["error"]["message"]
    assert record["transcript"], "the transcript is kept inline"
    assert (cand / "events.jsonl").stat().st_size > 0
    assert (cand / "workspace" / "answer.txt").read_text().rstrip("\n") == "yes"  # Codex ends lines
    # The counterpart and the group record are untouched by the failure.
    assert read_json(run.group_dir / "baseline" / "run.json")["state"] == "complete"
    assert outcome["group"]["state"] == "partially-complete"
    assert (run.group_dir / "manifest.json").is_file()


def test_a_failed_run_json_is_recorded_beside_it(
    tmp_path: Path, pi: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, env, endpoints = _group_run(tmp_path, pi)
    _inject(monkeypatch, _failing("run.json", "baseline"))
    try:
        _run_both(run, env)
    finally:
        endpoints.close()
    base = run.group_dir / "baseline"
    assert not (base / "run.json").exists()
    record = read_json(base / "run-error.json")
    assert record["error"]["kind"] == "persistence"
    assert (base / "transcript.json").is_file()
    assert read_json(run.group_dir / "candidate" / "run.json")["state"] == "complete"


def test_failed_grade_and_group_records_use_their_fallbacks(
    tmp_path: Path, pi: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, env, endpoints = _group_run(tmp_path, pi)
    real = evidence_module.write_once

    def write_once(path: Path, data: bytes) -> str:
        if path.name in ("deterministic-grade.json", "group.json"):
            raise EvidenceError(f"injected failure writing {path}")
        return real(path, data)

    _inject(monkeypatch, write_once)
    try:
        outcome = _run_both(run, env)
    finally:
        endpoints.close()
    grade = read_json(run.group_dir / "deterministic-grade-error.json")
    assert grade["state"] == "grade-error"
    assert [c["state"] for c in grade["checks"]] == ["fail", "pass"]
    group = read_json(run.group_dir / "group-error.json")
    assert group["state"] == "partially-complete"
    assert group["artifacts"] == {
        "grade": "deterministic-grade-error.json",
        "group": "group-error.json",
    }
    kinds = [e["artifact"] for e in group["errors"]]
    assert kinds == ["deterministic-grade.json", "group.json"]
    assert outcome["group"] == group
    for variant in ("baseline", "candidate"):
        assert read_json(run.group_dir / variant / "run.json")["state"] == "complete"


def test_nothing_is_ever_rewritten(tmp_path: Path, pi: Any) -> None:
    run, env, endpoints = _group_run(tmp_path, pi)
    try:
        _run_both(run, env)
        before = {p: p.read_bytes() for p in run.group_dir.rglob("*") if p.is_file()}
        run.finalise(env)  # a second finalise is a no-op, not a rewrite
    finally:
        endpoints.close()
    after = {p: p.read_bytes() for p in run.group_dir.rglob("*") if p.is_file()}
    assert before == after
    with pytest.raises(EvidenceError):
        evidence_module.write_json_once(run.group_dir / "group.json", {"state": "complete"})
    assert json.loads((run.group_dir / "group.json").read_text())["state"] == "complete"
