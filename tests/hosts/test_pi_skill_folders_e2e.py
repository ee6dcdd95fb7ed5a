"""A skill's snapshot keeps its folder's name, so Pi's own check of a skill's name against its
folder means what it says: silent for a skill whose name is its folder's (it used to warn for
every skill, each snapshot being named `0`, `1`, …), and the real mismatch shown at collection."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.pi.binary import pi_executable
from tests.support.files import write
from tests.support.paths import REPO
from tests.support.roots import Group, build, variant
from tests.support.runs import run, run_record

pytestmark = pytest.mark.pi

# Pi's own loader (`loadSkills`, what `--skill` goes through) on the given skill directories:
# the diagnostics it keeps for each.
PI_LOADER = """
import { loadSkills } from "@mariozechner/pi-coding-agent";
const paths = JSON.parse(process.argv[1]);
const { skills, diagnostics } = loadSkills({ cwd: process.cwd(), skillPaths: paths,
  includeDefaults: false });
console.log(JSON.stringify({ names: skills.map((s) => s.name), diagnostics }));
"""


def _pi_loader(paths: list[str]) -> dict[str, Any]:
    """What Pi 0.73.1's skill loader makes of `paths`, run on the pinned Node."""
    node = pi_executable(None, REPO, bundle=False).command()[0]
    done = subprocess.run(
        [node, "--input-type=module", "-e", PI_LOADER, json.dumps(paths)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout)
    return found


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
    loaded = _pi_loader(snapshots)
    assert loaded["names"] == ["note-taker", "template"]
    messages = [(Path(str(d["path"])).parent.name, d["message"]) for d in loaded["diagnostics"]]
    assert messages == [
        ("template-skill", 'name "template" does not match parent directory "template-skill"')
    ]
