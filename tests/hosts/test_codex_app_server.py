"""`codex app-server` messages into the observation: captured streams of the pinned Codex."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_skill_eval.hosts.codex.app_server import AppServerTranslator, exec_item
from pytest_skill_eval.hosts.observation import Observation

DATA = Path(__file__).parent / "data" / "codex"
SKILL = "/scratch/cx/candidate/resources/skills/0/changelog-keeper/SKILL.md"
SNAPSHOT = "/snap/changelog-keeper/SKILL.md"
READ_COMMAND = f"/bin/bash -lc \"cat '{SKILL}'\""


def translated(name: str, skills: dict[str, str] | None = None) -> Observation:
    """A captured app-server stream applied as the dialogue applies it: each turn begun as its
    `turn/start` is answered."""
    obs = Observation()
    translator = AppServerTranslator.of(obs, skills or {}, {"input": 1.0, "output": 2.0})
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        message: dict[str, Any] = json.loads(line)
        translator.apply(message)
        result = message.get("result")
        if isinstance(result, dict) and "turn" in result:
            number = len(obs.turns) + 1
            obs.begin_turn(number, f"prompt {number}", f"prompt {number}")
    return obs


def test_two_turns_in_one_thread_each_with_its_own_usage_reads_and_response() -> None:
    obs = translated("app-server-activation.jsonl", {SKILL: SNAPSHOT})
    first, second = obs.turns
    assert first.settled
    assert second.settled
    assert first.response == "Hi."
    assert second.response == "- Handle semicolons in CSV export"
    # The thread's running total (110, then 440) is the turns' 110 and 330.
    assert first.usage is not None
    assert second.usage is not None
    assert (first.usage["input"], first.usage["output"]) == (100, 10)
    assert (second.usage["input"], second.usage["output"]) == (300, 30)
    assert second.usage["cost"] == {"total": round((300 * 1.0 + 30 * 2.0) / 1e6, 12)}
    # The shell's read of the listed SKILL.md is a read of its snapshot, in turn two only.
    assert first.reads == []
    assert second.reads[0] == SNAPSHOT
    assert first.tool_activity == []
    assert [c["toolName"] for c in second.tool_activity] == ["exec_command", "exec_command"]
    assert second.tool_activity[0]["args"] == {"command": READ_COMMAND, "exitCode": 0}


def test_declared_commands_are_run_command_calls_and_a_refused_one_failed() -> None:
    obs = translated("app-server-commands.jsonl")
    (turn,) = obs.turns
    activity = turn.tool_activity
    assert [a["toolName"] for a in activity] == ["run_command"] * 5
    assert activity[0]["args"] == {"command": "look"}
    assert [a["isError"] for a in activity] == [False, False, False, False, True]
    assert turn.response == "Checked."
    assert turn.settled


def test_a_failed_turn_is_the_assistants_error_and_settles_it() -> None:
    obs = Observation()
    translator = AppServerTranslator.of(obs, {}, None)
    obs.begin_turn(1, "p", "p")
    turn = {"id": "t", "status": "failed", "error": {"message": "stream disconnected"}}
    assert translator.apply({"method": "turn/completed", "params": {"turn": turn}})
    assert obs.turns[0].assistant_error == "Codex reported: stream disconnected"


def test_responses_are_kept_by_id_and_the_servers_requests_apart() -> None:
    translator = AppServerTranslator.of(Observation(), {}, None)
    translator.apply({"id": 3, "result": {"ok": True}})
    translator.apply({"id": 7, "method": "item/tool/requestUserInput", "params": {}})
    assert translator.responses == {3: {"id": 3, "result": {"ok": True}}}
    assert [r["method"] for r in translator.requests] == ["item/tool/requestUserInput"]


def test_a_patch_keeps_each_changes_path_and_kind_as_codex_exec_names_them() -> None:
    item = {
        "type": "fileChange",
        "id": "call_0_0",
        "status": "inProgress",
        "changes": [
            {"path": "/w/a.md", "kind": {"type": "add"}, "diff": "x"},
            {"path": "/w/b.md", "kind": {"type": "update", "move_path": None}, "diff": "y"},
        ],
    }
    assert exec_item(item) == {
        "id": "call_0_0",
        "type": "file_change",
        "status": "in_progress",
        "changes": [{"path": "/w/a.md", "kind": "add"}, {"path": "/w/b.md", "kind": "update"}],
    }


def test_a_warning_in_a_turn_is_kept_in_the_transcript_not_as_an_error() -> None:
    obs = Observation()
    translator = AppServerTranslator.of(obs, {}, None)
    translator.apply({"method": "configWarning", "params": {"summary": "before any turn"}})
    obs.begin_turn(1, "p", "p")
    translator.apply({"method": "warning", "params": {"message": "Model metadata not found"}})
    assert obs.transcript == [{"role": "host", "warning": "Model metadata not found"}]
    assert obs.turns[0].assistant_error is None
