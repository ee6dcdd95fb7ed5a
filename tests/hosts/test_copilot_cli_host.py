"""Copilot CLI's tool dialect and usage, without starting it."""

from __future__ import annotations

from pathlib import Path

from pytest_skill_eval.hosts.copilot_cli.events import session_usage, turn_usage
from pytest_skill_eval.hosts.copilot_cli.tools import render
from pytest_skill_eval.modelserver.script import ToolCall

WORKSPACE = Path("/ws")


def _rendered(tool: str, **arguments: object) -> list[tuple[str, dict[str, object]]]:
    calls = render(ToolCall(tool, arguments), None, WORKSPACE)
    return [(call.name, dict(call.arguments)) for call in calls]


def test_neutral_calls_become_its_tools_on_absolute_paths() -> None:
    assert _rendered("read", path="notes.txt") == [("view", {"path": "/ws/notes.txt"})]
    assert _rendered("read", path="/abs/a.md", offset=3, limit=2) == [
        ("view", {"path": "/abs/a.md", "view_range": [3, 4]})
    ]
    assert _rendered("read", path="a.md", offset=5) == [
        ("view", {"path": "/ws/a.md", "view_range": [5, -1]})
    ]
    assert _rendered("write", path="r.json", content="{}") == [
        ("create", {"path": "/ws/r.json", "file_text": "{}"})
    ]
    edits = [{"oldText": "a", "newText": "b"}, {"oldText": "c", "newText": "d"}]
    assert _rendered("edit", path="n.txt", edits=edits) == [
        ("edit", {"path": "/ws/n.txt", "old_str": "a", "new_str": "b"}),
        ("edit", {"path": "/ws/n.txt", "old_str": "c", "new_str": "d"}),
    ]
    assert _rendered("skill", name="changelog-keeper") == [("skill", {"skill": "changelog-keeper"})]
    assert _rendered("run_command", command="hello") == [
        ("skill-eval-run_command", {"command": "hello"})
    ]
    assert _rendered("glob", pattern="*") == [("glob", {"pattern": "*"})]  # host-native


def test_a_turns_usage_is_what_the_sessions_totals_grew_by() -> None:
    def report(tokens_in: int, tokens_out: int) -> dict[str, object]:
        usage = {"inputTokens": tokens_in, "outputTokens": tokens_out, "cacheReadTokens": 0}
        return {"modelMetrics": {"scripted": {"usage": usage}}}

    first = session_usage(report(300, 30))
    assert first == {"input": 300, "output": 30, "cacheRead": 0, "cacheWrite": 0}
    second = session_usage(report(400, 40))
    assert turn_usage(first, second) == {
        "input": 100,
        "output": 10,
        "cacheRead": 0,
        "cacheWrite": 0,
        "cost": {"total": 0.0},
    }
    assert session_usage({"modelMetrics": "none"}) == dict.fromkeys(first, 0)


def test_project_skills_and_commands_above_the_workspace_are_switched_off(tmp_path: Path) -> None:
    from pytest_skill_eval.hosts.copilot_cli.config import settings

    workspace = tmp_path / "root" / ".skill-eval" / "runs" / "r" / "workspace"
    workspace.mkdir(parents=True)
    (tmp_path / "root" / ".claude" / "commands").mkdir(parents=True)
    (tmp_path / "root" / ".claude" / "commands" / "release.md").write_text("Cut a release.\n")
    document = settings(workspace, [str(tmp_path / "snapshots")])
    ignored = document["ignoredSkillsLocations"]
    # It looks in every directory above the workspace, up to `/`: each one's folders ignored.
    for place in (workspace, tmp_path / "root", tmp_path, Path("/"), tmp_path / "snapshots"):
        for folder in (".github/skills", ".claude/skills", ".agents/skills"):
            assert str(place / folder) in ignored, (place, folder)
    # No setting ignores a commands folder: the command it would list is disabled by name.
    assert document["disabledSkills"][-1] == "release"
