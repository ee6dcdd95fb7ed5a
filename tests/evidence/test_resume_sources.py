"""What `--skill-eval-resume` takes from an earlier result, attacked without starting a host."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_skill_eval.errors import SkillEvalError
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.evidence.layout import INPUT_NAMES
from pytest_skill_eval.evidence.records import InvocationRecord
from pytest_skill_eval.evidence.store import write_json_once, write_manifest
from pytest_skill_eval.run.resume import carry_over


def _invocation(root: Path) -> InvocationRecord:
    group = {"id": "g", "position": 1, "path": "groups/g.json", "sha256": "0" * 64}
    definition = {"path": "suite.json", "kind": "suite", "id": "s", "groups": [group]}
    return cast(
        InvocationRecord,
        {
            "schema_version": 1,
            "root": str(root),
            "definitions": [definition],
            "selection": {"group": None, "variant": None, "trial": 1, "trials": 1},
            "pins": {},
            "provider": {"cassettes": None, "record": "none"},
        },
    )


def _finished_group(directory: Path, run: dict[str, Any] | None = None) -> Path:
    for variant in ("baseline", "candidate"):
        write_json_once(directory / variant / layout.RUN, run or {"state": "complete"})
    record: dict[str, Any] = {
        "id": "g",
        "state": "passed",
        "variants": {"baseline": "complete", "candidate": "complete"},
    }
    write_json_once(directory / layout.GROUP, record)
    write_manifest(directory)
    return directory


def _earlier(runs: Path) -> Path:
    earlier = runs / "20260101000000-00000001"
    layout.groups_dir(earlier).mkdir(parents=True)
    write_json_once(layout.invocation_file(earlier), _invocation(runs.parent))
    return earlier


def test_a_finished_group_is_copied_and_named_by_its_manifest(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    earlier = _earlier(runs)
    _finished_group(layout.groups_dir(earlier) / "g")
    new = runs / "20260101000000-00000002"
    new.mkdir()
    invocation = _invocation(tmp_path)
    carry_over("latest", runs, new, invocation)
    (carried,) = invocation["resumedFrom"]["groups"]
    assert carried["group"] == "g"
    copied = layout.groups_dir(new) / "g"
    assert (copied / layout.GROUP).read_bytes() == (
        earlier / "groups/g" / layout.GROUP
    ).read_bytes()


def test_a_group_planted_as_a_link_is_never_carried_over(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    earlier = _earlier(runs)
    # A finished group from elsewhere, linked in: its manifest matches, but it is no evidence
    # of the result it sits in.
    outside = _finished_group(tmp_path / "outside" / "g")
    os.symlink(outside, layout.groups_dir(earlier) / "g")
    new = runs / "20260101000000-00000002"
    new.mkdir()
    invocation = _invocation(tmp_path)
    carry_over(earlier.name, runs, new, invocation)
    assert invocation["resumedFrom"]["groups"] == []
    assert not (layout.groups_dir(new) / "g").exists()


def test_a_refusal_removes_the_result_it_was_to_complete_into(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _earlier(runs)
    new = runs / "20260101000000-00000002"
    new.mkdir()
    invocation = _invocation(tmp_path)
    invocation["selection"]["trials"] = 3
    with pytest.raises(SkillEvalError, match="completes one result: drop --skill-eval-trials"):
        carry_over("latest", runs, new, invocation)
    assert not new.exists()


@pytest.mark.parametrize("changed", ["skills", "context", "script", "host-version", "model"])
def test_a_run_whose_inputs_changed_since_is_refused(tmp_path: Path, changed: str) -> None:
    # The run's recorded inputs against this invocation's, name by name, as reuse compares
    # them (what computes each input is `variant_inputs`, exercised over real runs elsewhere).
    recorded = {name: f"sha256:{name}" for name in INPUT_NAMES}
    runs = tmp_path / "runs"
    earlier = _earlier(runs)
    _finished_group(layout.groups_dir(earlier) / "g", {"state": "complete", "inputs": recorded})
    new = runs / "20260101000000-00000002"
    new.mkdir()
    carry_over("latest", runs, new, _invocation(tmp_path), lambda *_: recorded)  # unchanged
    assert (layout.groups_dir(new) / "g").is_dir()

    now = recorded | {changed: "sha256:changed"}
    again = runs / "20260101000000-00000003"
    again.mkdir()
    with pytest.raises(SkillEvalError) as refused:
        carry_over(earlier.name, runs, again, _invocation(tmp_path), lambda *_: now)
    assert f"group g's baseline in {earlier} ran from {changed} other than now" in str(
        refused.value
    )
    assert not again.exists()
