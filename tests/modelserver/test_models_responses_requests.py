"""Codex's Responses requests: per-run values normalised away, excerpts and context observed."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_skill_eval.modelserver.bodies import observations, request_context, request_excerpt
from pytest_skill_eval.modelserver.placeholders import normalise_request, request_sha256
from pytest_skill_eval.modelserver.script import ToolCall, Usage
from pytest_skill_eval.modelserver.scriptparse import load_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from pytest_skill_eval.modelserver.streams import parse_stream
from pytest_skill_eval.modelserver.upstream import auth_headers
from tests.support.http import FakeUpstream, Scripted, post, recording_route, responses_sse

DATA = Path(__file__).parent / "data" / "codex"
RESPONSES = "openai-responses"
SSE = "text/event-stream"
CANARY = "sk-canary-upstream-51c0ffee9d"
CODEX_KEY = "skill-eval-scripted-codex-key"
WS = "<scratch>/cx/wsg"
THREAD = "01a2308b-0fc2-7f13-99e4-1f8871b0ac23"
INSTALL = "6593cbd4-02fe-4a28-bb1a-f406541de859"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def captured(name: str = "resume-req.json") -> dict[str, Any]:
    body = json.loads((DATA / name).read_text(encoding="utf-8"))["body"]
    assert isinstance(body, dict)
    return body


def another_run(body: dict[str, Any], workspace: str, old_workspace: str = WS) -> dict[str, Any]:
    """The same request as a later run on another machine would send it."""
    text = json.dumps(body)
    # Every id of that run (thread, turns, windows, items, installation) is another one.
    text = UUID.sub(
        lambda m: hashlib.sha256(m.group(0).encode()).hexdigest()[:8] + m.group(0)[8:], text
    )
    for old, new in (
        ("2026-12-01", "2027-03-04"),
        ("Etc/UTC", "Europe/Berlin"),
        (old_workspace, workspace),
    ):
        text = text.replace(old, new)
    text = re.sub(r"Chunk ID: \w+", "Chunk ID: 9f00aa", text)
    text = re.sub(r"Wall time: [\d.]+ seconds", "Wall time: 0.0131 seconds", text)
    text = re.sub(
        r"turn_started_at_unix_ms\\\":\d+", 'turn_started_at_unix_ms\\\\":1800000000000', text
    )
    again = json.loads(text)
    # An answer with reasoning makes Codex send the (opaque, encrypted) item back.
    again["input"].insert(
        2, {"type": "reasoning", "id": "rs_9", "summary": [], "encrypted_content": "gAAA"}
    )
    assert isinstance(again, dict)
    return again


def test_a_captured_request_hashes_the_same_when_its_per_run_values_differ() -> None:
    first = captured()
    later_ws = "/home/ci/run-88/workspace"
    second = another_run(first, later_ws)
    for value in (THREAD, INSTALL, "2026-12-01", "Etc/UTC", WS, "31d6d1", "1796110751308"):
        assert value in json.dumps(first)
        assert value not in json.dumps(second)
    a = normalise_request(first, {"workspace": WS})
    b = normalise_request(second, {"workspace": later_ws})
    assert a == b
    assert request_sha256(a) == request_sha256(b)
    # Each kind of value is replaced, and the request still says what the model saw.
    assert a["prompt_cache_key"] == "{{prompt_cache_key}}"
    assert set(a["client_metadata"].values()) == {"{{client_metadata}}"}
    assert "x-codex-installation-id" in a["client_metadata"]
    assert {item.get("id") for item in a["input"]} == {"{{item_id}}"}
    environment = a["input"][2]["content"][0]["text"]
    assert "<cwd>{{cwd}}</cwd>" in environment
    assert "<current_date>{{date}}</current_date>" in environment
    assert "<timezone>{{timezone}}</timezone>" in environment
    assert "<root>{{workspace}}</root>" in environment
    assert a["input"][-1]["output"].startswith("Chunk ID: {{chunk_id}}\nWall time: {{wall_time}}")
    assert a["input"][-1]["output"].endswith("hello secret 4242\n")
    assert "{{workspace}}/.agents/skills" in a["input"][1]["content"][0]["text"]


def test_what_the_model_is_told_still_changes_the_hash() -> None:
    first = captured()
    changed = json.loads(json.dumps(first).replace("second turn READ:", "second turn WRITE:"))
    places = {"workspace": WS}
    assert request_sha256(normalise_request(first, places)) != request_sha256(
        normalise_request(changed, places)
    )
    output = json.loads(json.dumps(first).replace("hello secret 4242", "hello secret 4243"))
    assert request_sha256(normalise_request(first, places)) != request_sha256(
        normalise_request(output, places)
    )


def test_function_call_arguments_count_by_their_json_value() -> None:
    # Codex echoes a call's arguments as the provider spelled them; a replay renders them
    # compactly. Spacing and key order do not change the hash, a different value does.
    def body(arguments: str) -> dict[str, Any]:
        call = {"type": "function_call", "name": "exec_command", "call_id": "c1"}
        return {"model": "gpt-5.5", "input": [{**call, "arguments": arguments}]}

    spaced = body('{"cmd": "cat notes.txt", "yield_time_ms": 10}')
    compact = body('{"yield_time_ms":10,"cmd":"cat notes.txt"}')
    other = body('{"cmd":"cat other.txt","yield_time_ms":10}')
    assert request_sha256(normalise_request(spaced, {})) == request_sha256(
        normalise_request(compact, {})
    )
    assert request_sha256(normalise_request(spaced, {})) != request_sha256(
        normalise_request(other, {})
    )


def test_chat_bodies_keep_environment_like_text() -> None:
    # Only Responses bodies lose Codex's values; other cassettes keep their hashes.
    body = {"messages": [{"role": "user", "content": "<timezone>Etc/UTC</timezone>"}]}
    assert normalise_request(body, {}) == body


def test_excerpt_is_the_last_user_message_or_tool_output() -> None:
    body = captured()
    assert request_excerpt(body) == body["input"][-1]["output"][:200]
    first_turn = captured("text-req.json")
    assert request_excerpt(first_turn) == first_turn["input"][-1]["content"][0]["text"]


def test_context_of_a_responses_request() -> None:
    context = request_context(captured())
    assert context.system_prompt.startswith("You are Codex, a coding agent")
    assert "<skills_instructions>" in context.system_prompt
    assert "<permissions instructions>" in context.system_prompt
    assert [m.role for m in context.messages] == ["user", "user", "assistant", "user", "tool"]
    assert "first turn hi" in context.text
    assert "PONG from fake model" in context.text
    assert "hello secret 4242" in context.text
    assert "<skills_instructions>" not in context.text


@pytest.mark.parametrize(
    ("body", "system", "text"),
    [
        (
            {
                "messages": [
                    {"role": "system", "content": "SYS"},
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {"role": "assistant", "content": None, "tool_calls": []},
                    {"role": "tool", "content": "result"},
                ]
            },
            "SYS",
            "hi\nresult",
        ),
        (
            {
                "system": [{"type": "text", "text": "SYS"}],
                "messages": [
                    {"role": "user", "content": "hi"},
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "content": "result"}],
                    },
                ],
            },
            "SYS",
            "hi\nresult",
        ),
        ({"instructions": "SYS", "input": "hi"}, "SYS", "hi"),
    ],
)
def test_context_of_each_wire_format(body: dict[str, Any], system: str, text: str) -> None:
    context = request_context(body)
    assert (context.system_prompt, context.text) == (system, text)


def test_observations_are_shaped_like_the_observer_records() -> None:
    body = captured()
    records = observations([(1, body), (1, body), (2, body)])
    assert [(r["surface"], r["turn"], r.get("requestInTurn")) for r in records] == [
        ("system-prompt", 1, None),
        ("provider-context", 1, 1),
        ("provider-context", 1, 2),
        ("system-prompt", 2, None),
        ("provider-context", 2, 1),
    ]
    assert [r.get("providerRequest") for r in records if "providerRequest" in r] == [1, 2, 3]
    context = records[1]
    assert context["text"] == request_context(body).text
    assert context["characters"] == len(context["text"])
    assert context["messages"][0] == {
        "role": "user",
        "toolName": None,
        "text": body["input"][2]["content"][0]["text"],
    }
    assert records[0]["text"].startswith("You are Codex")


# --- record, then replay ---------------------------------------------------------------------


def split(data: bytes, size: int = 41) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


CODEX_HEADERS = {
    "Authorization": f"Bearer {CODEX_KEY}",
    "originator": "codex_exec",
    "session-id": THREAD,
    "user-agent": "codex_exec/0.171.0 (Debian 12.0.0; x86_64)",
}
CALL = ("exec_command", '{"cmd":"cat note.txt"}', "call_up_1")


def codex_session(workspace: str, *, later: bool = False) -> list[dict[str, Any]]:
    """Two requests of one Codex run in `workspace`: the prompt, then after a shell read.

    `later` gives them as another run sends them: other ids, date, timezone and timings.
    """
    bodies = [captured("text-req.json"), captured()]
    moved = [json.loads(json.dumps(b).replace(WS, workspace)) for b in bodies]
    moved = [json.loads(json.dumps(b).replace("<scratch>/cx/ws", workspace)) for b in moved]
    return [another_run(b, workspace, workspace) for b in moved] if later else moved


def record(
    server: ScriptedModelServer,
    start: Callable[[list[Scripted]], FakeUpstream],
    cassette: Path,
    workspace: str,
) -> tuple[FakeUpstream, list[tuple[int, bytes]], list[bytes]]:
    answers = [responses_sse(call=CALL), responses_sse(text="The note says hello secret 4242")]
    upstream = start([(200, SSE, split(a)) for a in answers])
    route = recording_route(
        server,
        upstream,
        cassette,
        api=RESPONSES,
        placeholders={"workspace": workspace},
        upstream_headers=auth_headers(RESPONSES, CANARY),
        match="body",
        prices={"input": 1.0, "output": 2.0, "cacheRead": 0.5, "cacheWrite": 4.0},
    )
    url = f"{route.base_url(RESPONSES)}/responses"
    replies = [post(url, body, CODEX_HEADERS) for body in codex_session(workspace)]
    route.close()
    assert route.failures == []
    assert route.recorded == 2
    # Both answers report 1500 input tokens (1024 cached) and 40 output tokens.
    assert route.spent == pytest.approx(2 * (476 * 1.0 + 40 * 2.0 + 1024 * 0.5) / 1e6)
    return upstream, replies, answers


def test_recording_relays_codex_traffic_and_keeps_keys_out(
    model_server: ScriptedModelServer,
    fake_upstream: Callable[[list[Scripted]], FakeUpstream],
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "cassettes" / "g" / "baseline.yaml"
    workspace = str(tmp_path / "run1" / "workspace")
    upstream, replies, answers = record(model_server, fake_upstream, cassette, workspace)
    assert replies == [(200, answers[0]), (200, answers[1])]
    for seen, sent in zip(upstream.requests, codex_session(workspace), strict=True):
        assert seen.path == "/v1/responses"
        assert seen.headers["authorization"] == f"Bearer {CANARY}"
        assert seen.headers["user-agent"].startswith("codex_exec/0.171.0")
        assert "session-id" not in seen.headers  # per-run ids stay on this machine
        assert seen.body == sent
    text = cassette.read_text(encoding="utf-8")
    assert CANARY not in text
    assert CODEX_KEY not in text
    data = yaml.safe_load(text)
    assert data["match"] == "body"
    first, second = data["interactions"]
    assert first["request"]["api"] == RESPONSES
    assert first["request"]["excerpt"] == "Say hello"
    assert first["request"]["body"]["prompt_cache_key"] == "{{prompt_cache_key}}"
    assert first["response"] == {
        "tool_calls": [
            {
                "name": "exec_command",
                "arguments": {"cmd": "cat note.txt"},
                "id": "call_up_1",
            }
        ],
        "usage": {"input": 476, "output": 40, "cache_read": 1024, "cache_write": 0},
        "stop": "tool_use",
    }
    assert second["response"]["text"] == "The note says hello secret 4242"


def test_a_match_body_replay_holds_when_per_run_values_change(
    model_server: ScriptedModelServer,
    fake_upstream: Callable[[list[Scripted]], FakeUpstream],
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "baseline.yaml"
    record(model_server, fake_upstream, cassette, str(tmp_path / "run1" / "workspace"))
    script = load_script(cassette)
    later = str(tmp_path / "run2" / "elsewhere")
    route = model_server.open_route(script, source=cassette, placeholders={"workspace": later})
    url = f"{route.base_url(RESPONSES)}/responses"
    bodies = codex_session(later, later=True)
    recorded = codex_session(str(tmp_path / "run1" / "workspace"))
    for old, new in zip(recorded, bodies, strict=True):
        assert old["prompt_cache_key"] != new["prompt_cache_key"]
        assert old["client_metadata"] != new["client_metadata"]
        assert "2026-12-01" in json.dumps(old)
        assert "2026-12-01" not in json.dumps(new)
    replies = [post(url, body, CODEX_HEADERS) for body in bodies]
    route.close()
    assert route.failures == []
    assert [status for status, _ in replies] == [200, 200]
    tool, text = (parse_stream(RESPONSES, data).response for _, data in replies)
    assert tool.tool_calls == (ToolCall("exec_command", {"cmd": "cat note.txt"}, "call_up_1"),)
    assert tool.usage == Usage(input=476, output=40, cache_read=1024, cache_write=0)
    assert text.text == "The note says hello secret 4242"


def test_a_match_body_replay_refuses_a_changed_prompt(
    model_server: ScriptedModelServer,
    fake_upstream: Callable[[list[Scripted]], FakeUpstream],
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "baseline.yaml"
    record(model_server, fake_upstream, cassette, str(tmp_path / "ws"))
    route = model_server.open_route(
        load_script(cassette), source=cassette, placeholders={"workspace": str(tmp_path / "ws")}
    )
    body = json.loads(
        json.dumps(codex_session(str(tmp_path / "ws"))[0]).replace("Say hello", "Say bye")
    )
    status, _ = post(f"{route.base_url(RESPONSES)}/responses", body, CODEX_HEADERS)
    route.close()
    assert status == 400
    [failure] = route.failures
    assert failure.reason == "request-mismatch"
    assert "request 1 has" in failure.message
    assert any(line.startswith("+") and "Say bye" in line for line in failure.message.split("\n"))
