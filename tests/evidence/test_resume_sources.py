"""What `--skill-eval-resume` takes from an earlier result, attacked without starting a host."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_skill_eval.errors import SkillEvalError
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.evidence.records import InvocationRecord
from pytest_skill_eval.evidence.store import sha256_file, write_json_once, write_manifest
from pytest_skill_eval.run.resume import carry_over
from pytest_skill_eval.workspace import fingerprint, fingerprint_digest
from tests.support.files import write


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


@pytest.mark.parametrize("changed", ["skill", "context", "script"])
def test_a_run_whose_inputs_changed_since_is_refused(tmp_path: Path, changed: str) -> None:
    root = tmp_path
    skill = write(root / "skills" / "x" / "SKILL.md", "Do it.\n")
    context = write(root / "AGENTS.md", "Be brief.\n")
    script = write(root / "scripts" / "g" / "baseline.yaml", "version: 1\n")
    files = [{"path": "AGENTS.md", "type": "file", "sha256": sha256_file(context)}]
    run = {
        "state": "complete",
        "resources": {
            "source": {"kind": "working-tree"},
            "fixture": None,
            "skills": [
                {
                    "declaredPath": "skills/x",
                    "sha256": fingerprint_digest(fingerprint(skill.parent)),
                }
            ],
            "context": [{"declaredPath": "AGENTS.md", "files": files}],
        },
        "provider": {"mode": "scripted", "cassette": str(script), "sha256": sha256_file(script)},
    }
    runs = tmp_path / "runs"
    earlier = _earlier(runs)
    _finished_group(layout.groups_dir(earlier) / "g", run)
    new = runs / "20260101000000-00000002"
    new.mkdir()
    carry_over("latest", runs, new, _invocation(tmp_path))  # unchanged: carried over
    assert (layout.groups_dir(new) / "g").is_dir()

    edited = {"skill": skill, "context": context, "script": script}[changed]
    edited.write_text(edited.read_text(encoding="utf-8") + "changed\n", encoding="utf-8")
    named = {"skill": "the working tree's skills/x", "context": "the working tree's AGENTS.md"}
    again = runs / "20260101000000-00000003"
    again.mkdir()
    with pytest.raises(SkillEvalError) as refused:
        carry_over(earlier.name, runs, again, _invocation(tmp_path))
    assert f"group g's baseline ran from {named.get(changed, f'the script {script}')} as it " in (
        str(refused.value)
    )
    assert not again.exists()
