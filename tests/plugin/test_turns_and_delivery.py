"""Per-turn workspace snapshots, and body delivery when Pi does not register the target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.files import read_json
from tests.support.roots import body_group, make_root
from tests.support.runs import results, run

pytestmark = pytest.mark.pi


def _write(path: str, text: str) -> dict[str, Any]:
    call = {"name": "write", "arguments": {"path": path, "content": text}}
    return {"response": {"tool_calls": [call]}}


def test_turn_scoped_expectations_get_a_snapshot_and_change_sets_per_turn(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    expectations = [
        {"id": "first-has-a", "kind": "path", "variant": "candidate", "path": "a.txt",
         "turn": 1, "expect": "exists"},
        {"id": "first-no-b", "kind": "path", "variant": "candidate", "path": "b.txt",
         "turn": 1, "expect": "absent"},
        {"id": "first-changes", "kind": "changed-paths", "variant": "candidate", "turn": 1,
         "expect": "equals", "paths": ["a.txt"]},
        {"id": "second-changes", "kind": "changed-paths", "variant": "candidate", "turn": 2,
         "expect": "equals", "paths": ["a.txt", "b.txt"]},
    ]  # fmt: skip
    group = body_group(
        "turns", input={"turns": ["Write a.", "Now write b."]}, expectations=expectations
    )
    script = [
        _write("a.txt", "a"),
        {"response": {"text": "wrote a"}},
        _write("b.txt", "b"),
        {"response": {"text": "wrote b"}},
    ]
    root = make_root(
        tmp_path / "root", [group], {"turns/baseline": script, "turns/candidate": script}
    )
    result = run(pytester, root)
    assert result.ret == 0, result.stdout.str()
    variant = results(root)[-1] / "groups" / "turns" / "candidate"
    record = read_json(variant / "run.json")
    first, second = record["turns"]
    assert first["workspace"]["changes"]["created"] == ["a.txt"]
    assert first["workspace"]["changesSincePrevious"]["created"] == ["a.txt"]
    assert second["workspace"]["changes"]["created"] == ["a.txt", "b.txt"]
    assert second["workspace"]["changesSincePrevious"]["created"] == ["b.txt"]
    assert (variant / "turns" / "1" / "workspace" / "a.txt").read_text() == "a"
    assert not (variant / "turns" / "1" / "workspace" / "b.txt").exists()
    assert (variant / "turns" / "2" / "workspace" / "b.txt").read_text() == "b"
    assert record["turns"][1]["deliveredPrompt"] == "Now write b."  # no redelivery on turn 2
    grade = read_json(variant.parent / "deterministic-grade.json")
    assert {c["id"]: c["state"] for c in grade["checks"]} == {
        "first-has-a": "pass",
        "first-no-b": "pass",
        "first-changes": "pass",
        "second-changes": "pass",
    }


def test_a_target_pi_would_not_register_is_refused_before_spend(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = make_root(
        tmp_path / "root",
        [body_group("undelivered", expectations=[])],
        {
            "undelivered/baseline": [{"response": {"text": "done"}}],
            "undelivered/candidate": [{"response": {"text": "done"}}],
        },
    )
    # Pi silently drops a skill without a description, so no /skill: command would exist for
    # it: the skill linter stops the invocation at collection, naming the file and the fix.
    (root / "skills" / "answer-writer" / "SKILL.md").write_text("---\nname: answer-writer\n---\n")
    result = run(pytester, root)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*groups/undelivered.json: /variants/candidate/skills/0: `description` is missing*"]
    )
    runs_dir = root / ".skill-eval" / "runs"
    assert not runs_dir.is_dir() or results(root) == []  # nothing ran, nothing spent
