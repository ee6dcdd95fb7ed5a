"""A variant's run is its named steps, and a loop feature attaches a way of taking them (as
reuse, pre-start and retries do) without a branch in the run: in-process, no subject runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.definitions import load_definition
from pytest_skill_eval.hosts.process import CancelToken
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.hosts.subject import SubjectResult
from pytest_skill_eval.run import Environment, GroupRun, variant
from pytest_skill_eval.run.records import never_ran, synthetic_run
from pytest_skill_eval.run.variant import Step, VariantRun, run_variant
from pytest_skill_eval.workspace import SourceResolver
from tests.support.files import read_json
from tests.support.roots import body_group, make_root


def _group_run(tmp_path: Path, retries: int) -> tuple[GroupRun, Environment]:
    root = make_root(tmp_path / "root", [body_group("answer")], {})
    loaded = load_definition(root / "suite.json", root, registered())
    result = tmp_path / "result"
    result.mkdir()

    def never(*_: Any) -> Any:
        raise AssertionError("an attached way answered: no subject runs")

    env = Environment(
        root=root,
        resolver=SourceResolver(root),
        cancel=CancelToken(),
        binary=never,
        endpoint=never,
        no_progress_s=600,
        retries=retries,
    )
    return GroupRun(loaded.groups[0], lambda trial: result, 1), env


def _attach(monkeypatch: pytest.MonkeyPatch, states: list[str]) -> list[VariantRun]:
    """Attach a way before the others that answers with the next of `states` each time."""
    seen: list[VariantRun] = []

    def scripted(run: VariantRun) -> SubjectResult | None:
        seen.append(run)
        run.directory.mkdir(exist_ok=run.again)
        error = {"kind": "infrastructure", "message": "scripted"}
        return never_ran(synthetic_run(run.group.loaded, run.variant, states.pop(0), error))

    monkeypatch.setattr(variant, "WAYS", (scripted, *variant.WAYS))
    return seen


def test_an_attached_way_decides_how_the_variant_runs_and_the_steps_are_taken_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group, env = _group_run(tmp_path, retries=0)
    seen = _attach(monkeypatch, ["invalid"])

    record = run_variant(group, "baseline", env)

    assert record["state"] == "invalid"
    assert read_json(group.group_dir / "baseline" / "run.json")["state"] == "invalid"
    (run,) = seen
    assert run.steps == [Step.START, Step.MATERIALISE, Step.CONVERSE, Step.PERSIST]


def test_retries_follow_the_persisted_run_and_take_the_steps_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group, env = _group_run(tmp_path, retries=1)
    seen = _attach(monkeypatch, ["infrastructure-failed", "invalid"])

    record = run_variant(group, "candidate", env)

    assert record["state"] == "invalid"
    assert [a["state"] for a in record["attempts"]] == ["infrastructure-failed"]
    first, again = seen
    assert first is again
    assert again.again
    persisted = [Step.MATERIALISE, Step.CONVERSE, Step.PERSIST]
    assert first.steps == [Step.START, *persisted, *persisted]
