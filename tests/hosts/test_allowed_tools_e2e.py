"""A skill whose front matter asks for `allowed-tools` is activated on every host that has a
skill tool, headless as the evaluator runs it: no host here needs a human's consent for it
(Claude Code's Skill is pre-allowed, Gemini CLI runs under yolo approval, opencode's skill tool
is allowed), so the skill linter declares no such refusal. Were a host to start denying it, the
run would look like a success; this says so first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.files import write
from tests.support.roots import Group, build, runtime, variant
from tests.support.runs import model_requests, result_dir, run, run_record

pytestmark = [pytest.mark.pi, pytest.mark.claude, pytest.mark.gemini]

MARKER = "TOOLED-BODY-9"
SKILL = (
    "---\nname: tooled\ndescription: Use tools. Use when asked to.\n"
    f"allowed-tools: Bash(git:*) Read Write\n---\n\n{MARKER}\n"
)


@pytest.mark.parametrize("host", ["claude-code", "gemini-cli", "opencode"])
def test_a_skill_asking_for_allowed_tools_is_activated_headless(
    pytester: pytest.Pytester, tmp_path: Path, host: str
) -> None:
    root = tmp_path / "root"
    write(root / "skills" / "tooled" / "SKILL.md", SKILL)
    write(root / "fixture" / "README.md", "notes\n")
    activate = {"name": "skill", "arguments": {"name": "tooled"}}
    group = Group(
        id="tooled",
        type="body",
        turns=["Go."],
        tools=["read"],
        fixture="fixture",
        runtime=runtime(host=host),
        candidate=variant(["skills/tooled"], 0),
        expectations=[],
        scripts={"candidate": [{"tool_calls": [activate]}, {"text": "Done."}]},
    )
    build(root, [group])

    result = run(pytester, root, "--skill-eval-variant", "candidate")

    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    record = run_record(root, f"tooled@{host}", "candidate")
    assert record["state"] == "complete", record["error"]
    assert record["activation"]["targetRead"] is True
    [activation] = record["turns"][0]["toolActivity"]
    assert (activation["toolName"], activation["isError"]) == ("skill", False)
    requests = model_requests(result_dir(root) / f"groups/tooled@{host}/candidate")
    assert MARKER in json.dumps(requests[1]["body"])  # the body reached the model
