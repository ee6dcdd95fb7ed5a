"""A declared skill named as one Gemini CLI bundles (`skill-creator`) runs on the real CLI in
place of the bundled one: the run used to fail saying the subject's run could not be recorded
("ValueError … cannot be installed"), although the subject never started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.files import write
from tests.support.roots import Group, build, runtime, variant
from tests.support.runs import model_requests, result_dir, run, run_record

pytestmark = [pytest.mark.pi, pytest.mark.gemini]

MARKER = "DECLARED-SKILL-CREATOR-7"
SKILL = (
    "---\nname: skill-creator\ndescription: Create a new skill. Use when asked for a skill.\n"
    f"---\n\n# Skill creator\n\n{MARKER}: write SKILL.md with front matter first.\n"
)


def test_a_declared_skill_creator_replaces_gemini_clis_bundled_one(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    write(root / "skills" / "skill-creator" / "SKILL.md", SKILL)
    write(root / "fixture" / "README.md", "notes\n")
    group = Group(
        id="creator",
        type="body",
        turns=["Make me a skill."],
        tools=["read"],
        fixture="fixture",
        runtime=runtime(host="gemini-cli"),
        candidate=variant(["skills/skill-creator"], 0),
        expectations=[],
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "skill", "arguments": {"name": "skill-creator"}}]},
                {"text": "Made."},
            ]
        },
    )
    build(root, [group])

    result = run(pytester, root, "--skill-eval-variant", "candidate")

    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert "could not be recorded" not in output
    record = run_record(root, "creator@gemini-cli", "candidate")
    assert record["state"] == "complete", record["error"]
    assert record["activation"]["targetRead"] is True
    requests = model_requests(result_dir(root) / "groups/creator@gemini-cli/candidate")
    activated = json.dumps(requests[1]["body"], ensure_ascii=False)
    assert "<activated_skill" in activated
    assert MARKER in activated  # the declared skill's body, not the bundled one's
    listing = json.dumps(requests[0]["body"], ensure_ascii=False)
    assert listing.count("skill-creator") >= 1
    assert "Create a new skill. Use when asked for a skill." in listing
    assert "antigravity" not in listing  # the other bundled skill stays disabled
