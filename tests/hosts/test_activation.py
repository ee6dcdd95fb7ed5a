"""The activation state of a run (`hosts/activation.py`): read, denied, another skill read, not
offered, offered cut or not read, and a script flagged for reading what was never offered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.evidence.skill_records import Activation, OfferedSkillsRecord, OfferedState
from pytest_skill_eval.hosts.activation import activation_facts

SCRIPTED = ("scripted", "Pi")


def _skills(tmp_path: Path) -> list[Path]:
    paths = []
    for name in ("0", "1"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SKILL.md").write_text("---\nname: x\ndescription: y\n---\n")
        paths.append(tmp_path / name)
    return paths


def _offered(target: OfferedState, other: OfferedState = "intact") -> OfferedSkillsRecord:
    return {
        "schema_version": 1,
        "host": "pi",
        "request": 0,
        "others": [],
        "skills": [
            {"index": 0, "name": "pdf-tools", "state": target},
            {"index": 1, "name": "debugging", "state": other},
        ],
    }


def _facts(
    skills: list[Path],
    offered: OfferedSkillsRecord | None,
    reads: list[Path] = (),  # type: ignore[assignment]
    activity: list[dict[str, Any]] = (),  # type: ignore[assignment]
    how: tuple[str, str] = SCRIPTED,
) -> Activation:
    read = [str((path / "SKILL.md").resolve()) for path in reads]
    activation: Activation = {"targetRead": skills[0] in reads, "successfulReadPaths": read}
    return activation_facts(activation, skills, 0, offered, activity, how)


@pytest.mark.parametrize(
    ("offered", "state"),
    [("intact", "not-read"), ("absent", "not-offered"), ("cut", "offered-cut")],
)
def test_a_target_not_read_says_why(tmp_path: Path, offered: OfferedState, state: str) -> None:
    facts = _facts(_skills(tmp_path), _offered(offered))
    assert facts["state"] == state
    assert facts["offered"] == offered
    assert facts["target"] == {"index": 0, "name": "pdf-tools"}


def test_reading_another_skill_names_it(tmp_path: Path) -> None:
    skills = _skills(tmp_path)
    facts = _facts(skills, _offered("intact"), reads=[skills[1]])
    assert facts["state"] == "read-another-skill"
    assert facts["otherSkillsRead"] == [{"index": 1, "name": "debugging"}]
    assert facts["unrealistic"] is None


def test_a_refused_call_naming_the_target_is_denied(tmp_path: Path) -> None:
    skills = _skills(tmp_path)
    by_name = [{"toolName": "Skill", "args": {"skill": "pdf-tools"}, "isError": True}]
    assert _facts(skills, _offered("intact"), activity=by_name)["state"] == "denied"
    path = str(skills[0].resolve() / "SKILL.md")
    by_path = [{"toolName": "read", "args": {"path": path}, "isError": True}]
    assert _facts(skills, _offered("intact"), activity=by_path)["state"] == "denied"
    other = [{"toolName": "Skill", "args": {"skill": "debugging"}, "isError": True}]
    assert _facts(skills, _offered("intact"), activity=other)["state"] == "not-read"
    allowed = [{"toolName": "Skill", "args": {"skill": "pdf-tools"}, "isError": False}]
    assert _facts(skills, _offered("intact"), activity=allowed)["state"] == "not-read"


def test_a_script_reading_a_skill_never_offered_is_flagged(tmp_path: Path) -> None:
    skills = _skills(tmp_path)
    facts = _facts(skills, _offered("absent"), reads=[skills[0]])
    assert facts["state"] == "read"
    assert facts["unrealistic"] == (
        "the script reads the SKILL.md of pdf-tools, which Pi never offered the model: no "
        "model could have chosen it from the skills it was shown"
    )
    # A recorded model really chose it: nothing to flag.
    recorded = _facts(skills, _offered("absent"), reads=[skills[0]], how=("replay", "Pi"))
    assert recorded["unrealistic"] is None


def test_without_a_record_of_the_offer_the_state_is_read_or_not(tmp_path: Path) -> None:
    skills = _skills(tmp_path)
    assert _facts(skills, None)["state"] == "not-read"
    assert _facts(skills, None)["offered"] is None
    assert _facts(skills, None, reads=[skills[0]])["state"] == "read"
