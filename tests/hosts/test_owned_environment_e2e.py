"""A group cannot hand the operator's Claude Code config dir to a subject: the real binary."""

from __future__ import annotations

import pytest

from tests.support.files import write
from tests.support.roots import Group, build, skill, variant
from tests.support.runs import skill_eval_args

pytestmark = [pytest.mark.pi, pytest.mark.claude]

CANARY = "operator-canary-skill"


def test_inheriting_claude_config_dir_on_a_chosen_claude_code_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The operator's own Claude Code config dir, holding a skill no subject may see.
    operator = pytester.path / "operator-claude"
    write(
        operator / "skills" / CANARY / "SKILL.md",
        f"---\nname: {CANARY}\ndescription: The operator's own skill.\n---\n\n{CANARY}\n",
    )
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(operator))
    root = pytester.path / "root"
    group = Group(
        id="config-dir",
        type="description",
        turns=["Log that CSV export handles semicolons."],
        tools=["read"],
        candidate=variant([skill(root, "changelog-keeper")], 0),
        # Declared on Pi, where CLAUDE_CONFIG_DIR means nothing, and run on Claude Code.
        runtime={
            "host": "pi",
            "prompt": "isolated",
            "session": False,
            "extensions": [],
            "environment": {"literal": {}, "inherit": ["CLAUDE_CONFIG_DIR"]},
        },
        scripts={"candidate": [{"text": "done"}]},
    )
    suite = build(root, [group])
    chosen = ("--skill-eval-host", "claude-code", "--skill-eval-variant", "candidate")
    result = pytester.runpytest_subprocess(*skill_eval_args(root, *chosen, suite=suite))
    # Unrefused, the subject listed the operator's skill to the model (its config dir was ours).
    received = [p.read_text() for p in root.rglob("model-requests.jsonl")]
    assert not [text for text in received if CANARY in text]
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            f"{root / 'groups' / 'config-dir.json'}: /runtime/environment/inherit/0: "
            "CLAUDE_CONFIG_DIR belongs to the subject's isolation on --skill-eval-host "
            "claude-code: *; remove it from runtime.environment.inherit"
        ]
    )
    assert "Traceback" not in result.stdout.str()
    # Refused before any subject started, like any definition error: no result at all.
    assert received == []
    assert not (root / ".skill-eval").exists()
