"""The Gemini wire: scripted answers rendered as Gemini CLI takes them, parsed back the same,
requests routed by their path, and neutral calls spoken in Gemini CLI's tools."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from pytest_skill_eval.hosts.dialect import render_for_host, renderer
from pytest_skill_eval.hosts.gemini_cli.registration import RUN_COMMAND as GEMINI_RUN_COMMAND
from pytest_skill_eval.hosts.registry import registration_for
from pytest_skill_eval.modelserver.gemini import (
    GEMINI,
    function_names,
    gemini_chunks,
    model_of,
    stream_url,
)
from pytest_skill_eval.modelserver.placeholders import normalise_request, request_sha256
from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall, Usage
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from pytest_skill_eval.modelserver.streams import parse_stream
from pytest_skill_eval.modelserver.upstream import auth_headers, upstream_url
from pytest_skill_eval.modelserver.wire import error_reply, render_stream

GEMINI_BODY = {
    "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    "tools": [{"functionDeclarations": [{"name": "read_file"}, {"name": "activate_skill"}]}],
}


def events(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line[6:]) for line in data.decode().split("\n\n") if line]


def test_a_scripted_answer_streams_as_gemini_and_parses_back() -> None:
    response = ScriptedResponse(
        text="Ahoy",
        thinking="plan",
        tool_calls=(ToolCall("read_file", {"file_path": "a.txt"}),),
        usage=Usage(input=7, output=3, cache_read=2),
        stop="tool_use",
    )
    reply = render_stream(GEMINI, response, model="gemini-2.5-flash", request_index=0)
    sent = events(reply.body)
    assert sent[0]["candidates"][0]["content"]["parts"] == [{"text": "plan", "thought": True}]  # type: ignore[index]
    last = sent[-1]
    assert last["candidates"][0]["finishReason"] == "STOP"  # type: ignore[index]
    assert last["usageMetadata"] == {
        "promptTokenCount": 9,
        "candidatesTokenCount": 3,
        "totalTokenCount": 12,
        "cachedContentTokenCount": 2,
    }
    parsed = parse_stream(GEMINI, reply.body)
    assert parsed.complete
    assert not parsed.problems
    assert parsed.response == response


def test_a_broken_stream_and_an_error_reply_speak_googles_error() -> None:
    broken = b"".join(
        gemini_chunks(
            ScriptedResponse(text="x", stop="error"),
            model="m",
            request_index=1,
            error_message="boom",
        )
    )
    assert events(broken)[-1] == {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}
    reply = error_reply(GEMINI, 429, "slow down")
    assert json.loads(reply.body) == {
        "error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}
    }


def test_requests_are_recognised_by_their_path_and_tools() -> None:
    assert model_of("/v1beta/models/gemini-2.5-flash:streamGenerateContent") == "gemini-2.5-flash"
    assert model_of("/v1beta/models/x:countTokens") is None
    assert function_names(GEMINI_BODY) == {"read_file", "activate_skill"}


def test_neutral_calls_become_gemini_cli_tools() -> None:
    calls = (
        ToolCall("read", {"path": "a.txt", "offset": 3, "limit": 2}),
        ToolCall("write", {"path": "b.txt", "content": "x"}),
        ToolCall(
            "edit",
            {
                "path": "b.txt",
                "edits": [{"oldText": "x", "newText": "y"}, {"oldText": "p", "newText": "q"}],
            },
        ),
        ToolCall("skill", {"name": "greet"}),
        ToolCall("run_command", {"command": "test"}),
    )
    response = ScriptedResponse(tool_calls=calls, stop="tool_use")
    rendered = render_for_host(response, "gemini-cli", {}, None).tool_calls
    assert [(c.name, dict(c.arguments)) for c in rendered] == [
        ("read_file", {"file_path": "a.txt", "start_line": 3, "end_line": 4}),
        ("write_file", {"file_path": "b.txt", "content": "x"}),
        (
            "replace",
            {
                "file_path": "b.txt",
                "instruction": "Replace the given text in b.txt.",
                "old_string": "x",
                "new_string": "y",
            },
        ),
        (
            "replace",
            {
                "file_path": "b.txt",
                "instruction": "Replace the given text in b.txt.",
                "old_string": "p",
                "new_string": "q",
            },
        ),
        ("activate_skill", {"name": "greet"}),
        (GEMINI_RUN_COMMAND, {"command": "test"}),
    ]


def test_the_server_answers_a_gemini_request_below_its_route() -> None:
    script = parse_script(
        {
            "version": 1,
            "interactions": [
                {"response": {"tool_calls": [{"name": "read", "arguments": {"path": "n.txt"}}]}}
            ],
        }
    )
    with ScriptedModelServer() as server:
        route = server.open_route(script, render=renderer("gemini-cli"))
        url = (
            route.base_url(GEMINI) + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        )
        request = urllib.request.Request(url, data=json.dumps(GEMINI_BODY).encode(), method="POST")
        with urllib.request.urlopen(request) as answer:
            sent = events(answer.read())
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"))
        assert json.loads(refused.value.read())["error"]["status"] == "INVALID_ARGUMENT"
    assert sent[-1]["modelVersion"] == "gemini-2.5-flash"
    parts = sent[-1]["candidates"][0]["content"]["parts"]  # type: ignore[index]
    assert parts == [{"functionCall": {"name": "read_file", "args": {"file_path": "n.txt"}}}]
    assert [(r.api, r.status) for r in route.requests] == [(GEMINI, 200), (GEMINI, 400)]


def test_a_recording_streams_the_declared_model_from_the_providers_api() -> None:
    url = upstream_url(stream_url("https://provider.test/", "gemini-2.5-flash"), GEMINI)
    assert url == (
        "https://provider.test/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert auth_headers(GEMINI, "k-1") == {"x-goog-api-key": "k-1"}


def test_gemini_clis_per_run_values_do_not_change_a_requests_hash() -> None:
    def body(stamp: str, day: str) -> dict[str, object]:
        call = {"id": f"read_file_{stamp}_0", "name": "read_file", "args": {"file_path": "a"}}
        answer = {"id": f"read_file_{stamp}_0", "name": "read_file", "response": {"output": "x"}}
        return {
            "contents": [
                {"role": "user", "parts": [{"text": f"Today's date is {day}.\nhi"}]},
                {"role": "model", "parts": [{"functionCall": call}]},
                {"role": "user", "parts": [{"functionResponse": answer}]},
            ]
        }

    stamps = registration_for("gemini-cli").request_stamps  # its date line
    first = normalise_request(body("1796183730799", "Wednesday, December 2, 2026"), {}, stamps)
    second = normalise_request(body("1796190000001", "Thursday, December 3, 2026"), {}, stamps)
    assert request_sha256(first) == request_sha256(second)
