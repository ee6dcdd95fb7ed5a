"""The OpenAI Responses API: rendering scripted answers, parsing real ones, the server route."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_skill_eval.modelserver.responses import custom_tools
from pytest_skill_eval.modelserver.script import ScriptedResponse, StopReason, ToolCall, Usage
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from pytest_skill_eval.modelserver.sse import SseDecoder
from pytest_skill_eval.modelserver.streams import error_message, parse_stream, stream_parser
from pytest_skill_eval.modelserver.wire import OPENAI_RESPONSES, render_stream
from tests.support.http import post

DATA = Path(__file__).parent / "data" / "codex"
RESPONSES = "openai-responses"


def events(data: bytes) -> list[dict[str, Any]]:
    """The JSON payloads of a stream, in order."""
    decoder = SseDecoder()
    decoded = decoder.feed(data) + decoder.close()
    return [json.loads(e.data) for e in decoded]


def test_the_api_is_named_openai_responses() -> None:
    assert OPENAI_RESPONSES == RESPONSES


def test_text_renders_as_the_events_codex_accepted() -> None:
    response = ScriptedResponse(text="PONG from fake model", usage=Usage(10, 5, 0, 0))
    reply = render_stream(RESPONSES, response, model="gpt-5.5", request_index=2)
    assert reply.status == 200
    assert dict(reply.headers)["Content-Type"] == "text/event-stream"
    got = events(reply.body)
    assert [e["type"] for e in got] == [
        "response.created",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e["sequence_number"] for e in got] == list(range(len(got)))
    assert got[0]["response"]["status"] == "in_progress"
    assert got[0]["response"]["model"] == "gpt-5.5"
    done = got[-2]["item"]
    assert done["type"] == "message"
    assert done["role"] == "assistant"
    assert done["content"] == [
        {"type": "output_text", "text": "PONG from fake model", "annotations": []}
    ]
    final = got[-1]["response"]
    assert final["status"] == "completed"
    assert final["output"] == [done]
    # The usage object exactly as the captured server sent it.
    captured = events((DATA / "text-resp.txt").read_bytes())[-1]["response"]["usage"]
    assert final["usage"] == captured


def test_function_call_item_has_name_json_arguments_and_call_id() -> None:
    call = ToolCall("exec_command", {"cmd": "cat '/w/note.txt'"})
    response = ScriptedResponse(tool_calls=(call,), stop="tool_use")
    got = events(render_stream(RESPONSES, response, model="m", request_index=7).body)
    done = [e["item"] for e in got if e["type"] == "response.output_item.done"]
    assert done == [
        {
            "type": "function_call",
            "id": "fc_scripted_7_0",
            "status": "completed",
            "name": "exec_command",
            "arguments": '{"cmd":"cat \'/w/note.txt\'"}',
            "call_id": "call_7_0",
        }
    ]
    deltas = [e["delta"] for e in got if e["type"] == "response.function_call_arguments.delta"]
    assert "".join(deltas) == done[0]["arguments"]
    assert len(deltas) == 2
    assert got[-1]["type"] == "response.completed"


def test_call_to_a_custom_tool_is_a_custom_tool_call_with_input() -> None:
    patch = "*** Begin Patch\n*** Add File: /w/a.txt\n+hi\n*** End Patch\n"
    calls = (ToolCall("apply_patch", {"input": patch}, id="call_p"),)
    response = ScriptedResponse(tool_calls=calls, stop="tool_use")
    reply = render_stream(
        RESPONSES, response, model="m", request_index=1, custom_tools={"apply_patch"}
    )
    got = events(reply.body)
    [done] = [e["item"] for e in got if e["type"] == "response.output_item.done"]
    assert done == {
        "type": "custom_tool_call",
        "id": "ctc_scripted_1_0",
        "status": "completed",
        "call_id": "call_p",
        "name": "apply_patch",
        "input": patch,
    }
    assert parse_stream(RESPONSES, reply.body).response == response


def test_custom_tools_are_read_from_the_request() -> None:
    body = json.loads((DATA / "resume-req.json").read_text(encoding="utf-8"))["body"]
    assert custom_tools(body) == {"apply_patch"}
    assert custom_tools({"tools": "nonsense"}) == frozenset()


def test_thinking_is_a_reasoning_item_with_a_summary() -> None:
    response = ScriptedResponse(thinking="Let me think.", text="Done.")
    reply = render_stream(RESPONSES, response, model="m", request_index=0)
    got = events(reply.body)
    done = [e["item"] for e in got if e["type"] == "response.output_item.done"]
    assert done[0] == {
        "type": "reasoning",
        "id": "rs_scripted_0_0",
        "summary": [{"type": "summary_text", "text": "Let me think."}],
    }
    assert done[1]["type"] == "message"
    assert [e["output_index"] for e in got if e["type"] == "response.output_item.added"] == [0, 1]


def test_length_and_stream_error_end_the_stream_in_responses_form() -> None:
    cut = render_stream(
        RESPONSES, ScriptedResponse(text="abc", stop="length"), model="m", request_index=0
    )
    final = events(cut.body)[-1]
    assert final["type"] == "response.incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    broken = render_stream(
        RESPONSES, ScriptedResponse(text="abc", stop="error"), model="m", request_index=0
    )
    final = events(broken.body)[-1]
    assert final["type"] == "response.failed"
    assert final["response"]["status"] == "failed"
    assert final["response"]["error"] == {
        "code": "server_error",
        "message": "scripted stream error",
    }


def test_http_error_reply_has_the_openai_error_body() -> None:
    response = (
        parse_script(
            {
                "version": 1,
                "interactions": [{"response": {"error": {"status": 429, "message": "m"}}}],
            },
            source=None,
        )
        .interactions[0]
        .response
    )
    reply = render_stream(RESPONSES, response, model="m", request_index=0)
    assert reply.status == 429
    assert json.loads(reply.body) == {
        "error": {"message": "m", "type": "rate_limit", "param": None, "code": None}
    }
    assert error_message(429, reply.body) == "m"


# --- parsing ---------------------------------------------------------------------------------


def test_captured_text_answer_parses() -> None:
    parsed = parse_stream(RESPONSES, (DATA / "text-resp.txt").read_bytes())
    assert parsed.problems == ()
    assert parsed.complete
    assert parsed.response == ScriptedResponse(
        text="PONG from fake model", usage=Usage(10, 5, 0, 0), stop="stop"
    )


def test_captured_tool_answer_parses() -> None:
    parsed = parse_stream(RESPONSES, (DATA / "tool-resp.txt").read_bytes())
    assert parsed.problems == ()
    call = ToolCall(
        "exec_command", {"cmd": "cat <scratch>/cx/home/.codex/skills/greet/SKILL.md"}, "call_fake_3"
    )
    assert parsed.response == ScriptedResponse(
        tool_calls=(call,), usage=Usage(10, 5, 0, 0), stop="tool_use"
    )


def _openai_like(*frames: dict[str, Any]) -> bytes:
    return b"".join(f"event: {f['type']}\ndata: {json.dumps(f)}\n\n".encode() for f in frames)


def test_openai_shaped_stream_with_deltas_only_and_cached_usage_parses() -> None:
    # api.openai.com sends argument deltas and a done item; a cut stream keeps the deltas.
    frames: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "output": []}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1", "summary": []},
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "item_id": "rs_1",
            "summary_index": 0,
            "delta": "Plan.",
        },
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {
                "type": "function_call",
                "id": "fc_1",
                "name": "exec_command",
                "arguments": "",
                "call_id": "call_A",
            },
        },
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": '{"cmd"'},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": ':"ls"}'},
    ]
    final = {
        "type": "response.completed",
        "response": {
            "status": "completed",
            "usage": {
                "input_tokens": 1500,
                "input_tokens_details": {"cached_tokens": 1024},
                "output_tokens": 40,
                "output_tokens_details": {"reasoning_tokens": 12},
                "total_tokens": 1540,
            },
        },
    }
    whole = parse_stream(RESPONSES, _openai_like(*frames, final))
    assert whole.problems == ()
    assert whole.response == ScriptedResponse(
        thinking="Plan.",
        tool_calls=(ToolCall("exec_command", {"cmd": "ls"}, "call_A"),),
        usage=Usage(input=476, output=40, cache_read=1024, cache_write=0),
        stop="tool_use",
    )
    cut = parse_stream(RESPONSES, _openai_like(*frames))
    assert not cut.complete
    assert "the stream ended before its final event" in cut.problems
    assert cut.response.tool_calls == whole.response.tool_calls


def test_failed_and_error_events_parse_as_error() -> None:
    failed = {"type": "response.failed", "response": {"status": "failed", "error": {}}}
    assert parse_stream(RESPONSES, _openai_like(failed)).response.stop == "error"
    error = {"type": "error", "code": "server_error", "message": "boom"}
    parsed = parse_stream(RESPONSES, _openai_like(error))
    assert (parsed.response.stop, parsed.complete) == ("error", True)


_words = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=150)
_args = st.dictionaries(st.text(max_size=8), st.none() | st.integers() | _words, max_size=3)
_calls = st.lists(
    st.builds(
        ToolCall,
        name=st.sampled_from(["exec_command", "apply_patch", "view_image"]),
        arguments=_args,
        id=st.none() | st.just("call_x"),
    ),
    max_size=3,
    unique_by=lambda c: c.id or object(),
)


@st.composite
def responses(draw: st.DrawFn) -> ScriptedResponse:
    calls = tuple(
        dataclasses.replace(c, arguments={"input": draw(_words)}) if c.name == "apply_patch" else c
        for c in draw(_calls)
    )
    first: StopReason = "tool_use" if calls else "stop"
    stop = draw(st.sampled_from([first, "length", "error"]))
    usage = draw(st.builds(Usage, *(st.integers(0, 10**6) for _ in range(4))))
    return ScriptedResponse(
        text=draw(st.none() | _words.filter(bool)),
        thinking=draw(st.none() | _words.filter(bool)),
        tool_calls=calls,
        usage=usage,
        stop=stop,
    )


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(response=responses(), split=st.integers(1, 97))
def test_parsing_inverts_the_responses_renderer(response: ScriptedResponse, split: int) -> None:
    reply = render_stream(
        RESPONSES, response, model="m", request_index=3, custom_tools={"apply_patch"}
    )
    expected = dataclasses.replace(
        response,
        tool_calls=tuple(
            dataclasses.replace(c, id=c.id or f"call_3_{i}")
            for i, c in enumerate(response.tool_calls)
        ),
    )
    parser = stream_parser(RESPONSES)
    data = reply.body
    for i in range(0, len(data), split):
        parser.feed(data[i : i + split])
    parsed = parser.finish()
    assert parsed.problems == ()
    assert parsed.response == expected


# --- the server route ------------------------------------------------------------------------


def test_server_answers_post_v1_responses(model_server: ScriptedModelServer) -> None:
    script = parse_script(
        {"version": 1, "interactions": [{"response": {"text": "hello"}}]}, source=None
    )
    body = json.loads((DATA / "text-req.json").read_text(encoding="utf-8"))["body"]
    with model_server.open_route(script) as route:
        base = route.base_url(RESPONSES)
        assert base.endswith(f"/r/{route.token}/v1")
        status, data = post(f"{base}/responses", body)
    assert status == 200
    assert parse_stream(RESPONSES, data).response.text == "hello"
    assert [(r.api, r.path, r.status) for r in route.requests] == [
        (RESPONSES, "/v1/responses", 200)
    ]
    assert route.failures == []


def test_server_errors_on_the_responses_route_are_openai_shaped(
    model_server: ScriptedModelServer,
) -> None:
    script = parse_script({"version": 1, "interactions": [{"response": {"text": "a"}}]})
    with model_server.open_route(script) as route:
        url = f"{route.base_url(RESPONSES)}/responses"
        assert post(url, {"model": "m"})[0] == 200
        status, data = post(url, {"model": "m"})
    assert status == 400
    assert "script exhausted" in json.loads(data)["error"]["message"]


@pytest.mark.parametrize("name", ["text-resp.txt", "tool-resp.txt"])
def test_every_captured_answer_is_complete(name: str) -> None:
    assert parse_stream(RESPONSES, (DATA / name).read_bytes()).complete
