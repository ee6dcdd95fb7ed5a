"""A skill's snapshot keeps its folder's name, so Pi's own check of a skill's name against its
folder means what it says: silent for a skill whose name is its folder's (it used to warn for
every skill, each snapshot being named `0`, `1`, …), and the real mismatch shown at collection,
kept as evidence from Pi's own loader, and shown in the terminal and the text view."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.views.text import render_text
from tests.support.files import read_json, write
from tests.support.roots import Group, build, variant
from tests.support.runs import result_dir, run, run_record

pytestmark = pytest.mark.pi


def _skill(root: Path, folder: str, name: str) -> str:
    text = f"---\nname: {name}\ndescription: Leave a note. Use when asked to.\n---\n\nDo it.\n"
    write(root / "skills" / folder / "SKILL.md", text)
    return f"skills/{folder}"


def test_pi_checks_a_skills_name_against_its_own_folder_not_an_index(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    write(root / "fixture" / "README.md", "notes\n")
    declared = [
        _skill(root, "note-taker", "note-taker"),
        _skill(root, "template-skill", "template"),
    ]
    group = Group(
        id="folders",
        type="body",
        turns=["Leave a note."],
        tools=["read"],
        fixture="fixture",
        candidate=variant(declared, 0),
        expectations=[],
        scripts={"candidate": [{"text": "Done."}]},
    )
    build(root, [group])

    result = run(pytester, root, "--skill-eval-variant", "candidate")

    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, output
    # The real mismatch is shown before anything runs; the matching skill is not named.
    assert (
        "/variants/candidate/skills/1: `name` 'template' does not match its folder "
        "'template-skill'; rename the folder or the skill so they match"
    ) in output
    assert "'note-taker' does not match" not in output
    record = run_record(root, "folders", "candidate")
    assert record["state"] == "complete", record["error"]
    snapshots = [s["path"] for s in record["resources"]["skills"]]
    assert [Path(p).parts[-2:] for p in snapshots] == [
        ("0", "note-taker"),
        ("1", "template-skill"),
    ]
    # Pi's own loader's warnings, kept as evidence: the mismatch, and nothing of the other.
    mismatch = 'name "template" does not match parent directory "template-skill"'
    kept = read_json(result_dir(root) / "groups" / "folders" / "candidate" / "skill-warnings.json")
    assert kept == {
        "host": "pi",
        "warnings": [
            {"skill": "skills/template-skill", "index": 1, "type": "warning", "message": mismatch}
        ],
    }
    shown = f"pi: skills/template-skill: {mismatch}"
    assert f"candidate skill-warning: {shown}" in output  # the terminal summary
    assert f"  skill-warning: {shown}" in render_text(result_dir(root)).splitlines()
