"""The shipped example suite on Claude Code, from the same scripts as Pi, offline (every host at
once: `test_all_hosts_e2e.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import runs
from tests.support.files import read_json

pytestmark = [pytest.mark.pi, pytest.mark.claude]

# What the example suite's scripts give on Pi (tests/plugin/test_example_e2e.py asserts the same).
EXPECTED = {
    "natural-activation": (
        {"baseline-reads-skill": "fail", "candidate-reads-skill": "pass"},
        {"skill-read-on-first-turn": "fail-to-pass"},
    ),
    "changelog-entry": (
        {
            "baseline-entry": "fail",
            "candidate-entry": "pass",
            "baseline-only-changelog": "pass",
            "candidate-only-changelog": "pass",
            "candidate-read-first": "pass",
            "candidate-reply": "pass",
        },
        {"entry-in-fixed": "fail-to-pass", "only-changelog": "pass-to-pass"},
    ),
}


def _outcome(group_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    grade: dict[str, Any] = read_json(group_dir / "deterministic-grade.json")
    return (
        {c["id"]: c["state"] for c in grade["checks"]},
        {c["id"]: c["transition"] for c in grade["comparisons"]},
    )


def test_example_suite_on_claude_code_gives_pis_states_and_transitions(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    result = runs.run(pytester, example_root, "-v", "--skill-eval-host", "claude-code")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*natural-activation?candidate@claude-code? PASSED*",
            "*changelog-entry::entry-in-fixed?comparison@claude-code? FAIL-TO-PASS*",
            "*group changelog-entry@claude-code ?complete? baseline=complete candidate=complete*",
        ]
    )
    assert "cross-host" not in result.stdout.str()  # one host: no table
    result_dir = runs.result_dir(example_root)
    assert read_json(result_dir / "invocation.json")["hosts"] == ["claude-code"]
    summary = read_json(result_dir / "summary.json")
    assert [(g["id"], g["host"]) for g in summary["groups"]] == [
        ("natural-activation", "claude-code"),
        ("changelog-entry", "claude-code"),
    ]
    assert sorted(p.name for p in (result_dir / "groups").iterdir()) == [
        "changelog-entry@claude-code",
        "natural-activation@claude-code",
    ]
    for group_id, expected in EXPECTED.items():
        group_dir = result_dir / "groups" / f"{group_id}@claude-code"
        assert _outcome(group_dir) == expected, group_id
        for variant in ("baseline", "candidate"):
            run = read_json(group_dir / variant / "run.json")
            assert run["host"] == {
                "name": "claude-code",
                "chosenBy": "invocation",
                "declared": "pi",
            }
            assert run["process"]["host"] == "claude-code"
            assert run["provider"]["mode"] == "scripted"
            assert "pi" not in run
