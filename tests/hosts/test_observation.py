"""Event handling on recorded Pi 0.73.1 streams (no Pi process needed)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_skill_eval.hosts.observation import Observation, canonical_reads, merge_usage
from pytest_skill_eval.hosts.pi.events import apply_event, message_text
from pytest_skill_eval.hosts.process import _parse_frame

DATA = Path(__file__).parent / "data"


def _events(name: str) -> list[dict[str, object]]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_json_mode_capture_gives_turn_tools_usage_and_response() -> None:
    obs = Observation()
    turn = obs.begin_turn(1, "Uppercase input.txt into out.txt", "Uppercase input.txt into out.txt")
    settled = [apply_event(obs, event) for event in _events("a_json_tools.events.jsonl")]
    assert settled[-1] is True
    assert settled.count(True) == 1
    assert turn.settled
    assert turn.response == "Done: wrote out.txt"
    assert [a["toolName"] for a in turn.tool_activity] == ["read", "write"]
    assert all(a["completed"] and a["isError"] is False for a in turn.tool_activity)
    assert turn.reads == ["input.txt"]
    assert turn.usage is not None
    assert turn.usage["input"] == 1200
    assert turn.usage["output"] == 60
    assert turn.usage["cacheRead"] == 1000
    assert round(turn.usage["cost"]["total"], 6) == round(0.0039 + 2 * (0.0003 + 0.00015), 6)
    assert obs.model == {"provider": "fake", "model": "fake-model"}
    # user, assistant, toolResult, assistant, toolResult, assistant
    assert [m["role"] for m in obs.transcript] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert obs.settled(1)
    assert obs.assistant_error() is None


def test_rpc_capture_events_outside_a_turn_are_ignored() -> None:
    obs = Observation()
    for record in _events("b_rpc_transcript.jsonl"):
        if ">>> stdin" in record or record.get("type") == "response":
            continue
        apply_event(obs, record)
    assert obs.transcript == []  # no turn was begun, so nothing is attributed


def test_error_stop_reason_is_an_assistant_error_and_sticks() -> None:
    obs = Observation()
    turn = obs.begin_turn(1, "p", "p")
    apply_event(
        obs,
        {
            "type": "message_end",
            "message": {
                "role": "assistant",
                "content": [],
                "stopReason": "error",
                "errorMessage": "500 kaboom",
            },
        },
    )
    apply_event(obs, {"type": "message_end", "message": {"role": "assistant", "content": "later"}})
    assert turn.assistant_error == "500 kaboom"
    assert turn.response == "later"


def test_blocked_read_is_not_a_successful_read() -> None:
    obs = Observation()
    turn = obs.begin_turn(1, "p", "p")
    apply_event(
        obs,
        {
            "type": "tool_execution_start",
            "toolCallId": "c1",
            "toolName": "read",
            "args": {"path": "/etc/passwd"},
        },
    )
    apply_event(
        obs,
        {
            "type": "tool_execution_end",
            "toolCallId": "c1",
            "toolName": "read",
            "isError": True,
            "result": {},
        },
    )
    assert turn.reads == []
    assert turn.tool_activity[0]["isError"] is True


def test_extension_error_is_a_protocol_error() -> None:
    obs = Observation()
    apply_event(
        obs,
        {
            "type": "extension_error",
            "extensionPath": "/x.mjs",
            "event": "tool_call",
            "error": "boom",
        },
    )
    assert obs.protocol_errors[0]["reason"] == "extension-error"


def test_frames_are_decoded_per_line() -> None:
    assert _parse_frame(1, '{"a": "é"}'.encode()).event == {"a": "é"}
    assert _parse_frame(2, b"\xc3").error == "invalid-utf-8"
    assert _parse_frame(3, b"   ").error == "empty-record"
    assert _parse_frame(4, b"[1]").error == "not-an-object"
    assert _parse_frame(5, b"{oops").error == "invalid-json"
    assert _parse_frame(6, b"{}\r").event == {}


def test_usage_merging_treats_missing_values_as_zero() -> None:
    total = merge_usage(None, {"input": 5, "cost": {"total": 0.5}})
    total = merge_usage(total, {"output": 7})
    assert total is not None
    assert (total["input"], total["output"], total["cost"]["total"]) == (5, 7, 0.5)
    assert merge_usage(None, "nonsense") is None


def test_message_text_joins_text_parts() -> None:
    message = {
        "content": [
            {"type": "text", "text": "a"},
            {"type": "toolCall"},
            {"type": "text", "text": "b"},
        ]
    }
    assert message_text(message) == "ab"
    assert message_text({"content": "plain"}) == "plain"


def test_canonical_reads_resolve_at_prefix_relative_and_drop_missing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "link.txt").symlink_to(tmp_path / "a.txt")
    reads = canonical_reads(["a.txt", "@a.txt", str(tmp_path / "link.txt"), "gone.txt"], tmp_path)
    assert reads == [str((tmp_path / "a.txt").resolve())]
