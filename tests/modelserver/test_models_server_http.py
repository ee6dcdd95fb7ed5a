"""HTTP-level tests of the scripted model server, with urllib against the running server."""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pytest_skill_eval.modelserver.placeholders import normalise_request, request_sha256
from pytest_skill_eval.modelserver.script import Script
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.support.http import Reply, anthropic_url, openai_url, post_reply

OPENAI = "openai-completions"
ANTHROPIC = "anthropic-messages"
WS = "/abs/run-17/workspace"
SKILL = "/abs/run-17/skills/0"
PLACEHOLDERS = {"workspace": WS, "skill:0": SKILL}


def script(*responses: dict[str, Any], **top: Any) -> Script:
    return parse_script(
        {"version": 1, **top, "interactions": [{"response": r} for r in responses]},
        source=Path("/suite/cassettes/g/baseline.yaml"),
    )


def openai_chunks(reply: Reply) -> list[dict[str, Any]]:
    """The JSON chunks of an OpenAI SSE stream; asserts the [DONE] terminator."""
    assert reply.status == 200
    assert reply.content_type == "text/event-stream"
    frames = [f for f in reply.body.decode().split("\n\n") if f]
    assert all(f.startswith("data: ") for f in frames)
    assert frames[-1] == "data: [DONE]"
    return [json.loads(f[len("data: ") :]) for f in frames[:-1]]


def anthropic_events(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) pairs of an Anthropic SSE stream; checks event name == data type."""
    assert reply.status == 200
    assert reply.content_type == "text/event-stream"
    events = []
    for frame in (f for f in reply.body.decode().split("\n\n") if f):
        event_line, data_line = frame.split("\n")
        name = event_line.removeprefix("event: ")
        data = json.loads(data_line.removeprefix("data: "))
        assert data["type"] == name
        events.append((name, data))
    return events


def deltas(chunks: list[dict[str, Any]], key: str) -> str:
    return "".join(c["choices"][0]["delta"].get(key) or "" for c in chunks if c["choices"])


BODY = {"model": "scripted", "messages": [{"role": "user", "content": "hi"}], "stream": True}
LONG_TEXT = "The quick brown fox jumps over the lazy dog. " * 4


# --- OpenAI chat completions ------------------------------------------------------------


def test_openai_text_and_thinking_stream(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script({"thinking": "Let me think.", "text": LONG_TEXT}), source=None, placeholders={}
    )
    chunks = openai_chunks(post_reply(openai_url(model_server, route.token), BODY))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert all(c["model"] == "scripted" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert deltas(chunks, "reasoning_content") == "Let me think."
    assert deltas(chunks, "content") == LONG_TEXT
    content_chunks = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert len(content_chunks) > 1
    # Reasoning comes before any content.
    first_reasoning = next(
        i
        for i, c in enumerate(chunks)
        if c["choices"] and c["choices"][0]["delta"].get("reasoning_content")
    )
    assert first_reasoning < chunks.index(content_chunks[0])
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finish[-1] == "stop"
    assert all(f is None for f in finish[:-1])
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 10,
        "total_tokens": 110,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    assert route.failures == []


def test_openai_tool_calls_with_placeholders(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script(
            {
                "text": "Reading.",
                "tool_calls": [
                    {"name": "read", "arguments": {"path": "{{skill:0}}/SKILL.md"}},
                    {
                        "name": "write",
                        "id": "mine-1",
                        "arguments": {
                            "path": "{{workspace}}/out.txt",
                            "content": "see {{workspace}} and {{unknown}}",
                            "nested": [{"p": "{{workspace}}/x"}, 3, None, True],
                        },
                    },
                ],
            }
        ),
        source=None,
        placeholders=PLACEHOLDERS,
    )
    chunks = openai_chunks(post_reply(openai_url(model_server, route.token), BODY))
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for part in chunk["choices"][0]["delta"].get("tool_calls", []) if chunk["choices"] else []:
            call = calls.setdefault(part["index"], {"arguments": "", "fragments": 0})
            if "id" in part:
                call["id"] = part["id"]
                call["name"] = part["function"]["name"]
                assert part["type"] == "function"
                assert part["function"]["arguments"] == ""
            else:
                call["arguments"] += part["function"]["arguments"]
                call["fragments"] += 1
    assert sorted(calls) == [0, 1]
    assert calls[0]["id"] == "call_0_0"
    assert calls[0]["name"] == "read"
    assert json.loads(calls[0]["arguments"]) == {"path": f"{SKILL}/SKILL.md"}
    assert calls[1]["id"] == "mine-1"
    assert json.loads(calls[1]["arguments"]) == {
        "path": f"{WS}/out.txt",
        "content": f"see {WS} and {{{{unknown}}}}",
        "nested": [{"p": f"{WS}/x"}, 3, None, True],
    }
    assert calls[0]["fragments"] == 2
    assert deltas(chunks, "content") == "Reading."
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"


def test_openai_usage_numbers_with_cache(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script(
            {"text": "a", "usage": {"input": 1000, "output": 40, "cache_read": 500}},
            {"text": "b", "usage": {"input": 7, "output": 3, "cache_read": 11, "cache_write": 13}},
        ),
        source=None,
        placeholders={},
    )
    first = openai_chunks(post_reply(openai_url(model_server, route.token), BODY))[-1]["usage"]
    assert first == {
        "prompt_tokens": 1500,
        "completion_tokens": 40,
        "total_tokens": 1540,
        "prompt_tokens_details": {"cached_tokens": 500},
    }
    second = openai_chunks(post_reply(openai_url(model_server, route.token), BODY))[-1]["usage"]
    # Pi reads cacheRead = cached - cache_write and input = prompt - cached.
    assert second == {
        "prompt_tokens": 31,
        "completion_tokens": 3,
        "total_tokens": 34,
        "prompt_tokens_details": {"cached_tokens": 24, "cache_write_tokens": 13},
    }


def test_openai_length_and_broken_stream(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script({"text": "cut", "stop": "length"}, {"text": "half", "stop": "error"}),
        source=None,
        placeholders={},
    )
    url = openai_url(model_server, route.token)
    length = openai_chunks(post_reply(url, BODY))
    assert [c["choices"][0]["finish_reason"] for c in length if c["choices"]][-1] == "length"
    broken = openai_chunks(post_reply(url, BODY))
    assert deltas(broken, "content") == "half"
    assert [c["choices"][0]["finish_reason"] for c in broken if c["choices"]][-1] == "error"
    assert route.failures == []


# --- Anthropic messages -----------------------------------------------------------------


def test_anthropic_text_thinking_and_usage(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script(
            {
                "thinking": "Hmm {{workspace}}",
                "text": LONG_TEXT,
                "usage": {"input": 900, "output": 21, "cache_read": 300, "cache_write": 50},
            }
        ),
        source=None,
        placeholders=PLACEHOLDERS,
    )
    body = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}
    events = anthropic_events(post_reply(anthropic_url(model_server, route.token), body))
    names = [name for name, _ in events]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert start["role"] == "assistant"
    assert start["model"] == "claude-sonnet-4-5"
    assert start["usage"] == {
        "input_tokens": 900,
        "output_tokens": 0,
        "cache_read_input_tokens": 300,
        "cache_creation_input_tokens": 50,
    }
    blocks = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert [b["type"] for b in blocks] == ["thinking", "text"]
    by_index: dict[int, list[dict[str, Any]]] = {}
    for name, data in events:
        if name == "content_block_delta":
            by_index.setdefault(data["index"], []).append(data["delta"])
    thinking = "".join(d["thinking"] for d in by_index[0] if d["type"] == "thinking_delta")
    assert thinking == f"Hmm {WS}"
    assert any(d["type"] == "signature_delta" for d in by_index[0])
    assert "".join(d["text"] for d in by_index[1]) == LONG_TEXT
    assert len(by_index[1]) > 1
    stops = [d["index"] for n, d in events if n == "content_block_stop"]
    assert stops == [0, 1]
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert delta["usage"] == {
        "input_tokens": 900,
        "output_tokens": 21,
        "cache_read_input_tokens": 300,
        "cache_creation_input_tokens": 50,
    }


def test_anthropic_tool_use_with_placeholders(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script(
            {
                "tool_calls": [
                    {"name": "read", "arguments": {"path": "{{workspace}}/a.txt"}},
                    {"name": "read", "id": "toolu_custom", "arguments": {"path": "{{skill:0}}/x"}},
                ]
            }
        ),
        source=None,
        placeholders=PLACEHOLDERS,
    )
    events = anthropic_events(post_reply(anthropic_url(model_server, route.token), BODY))
    starts = [d for n, d in events if n == "content_block_start"]
    assert [s["content_block"]["type"] for s in starts] == ["tool_use", "tool_use"]
    assert [s["content_block"]["id"] for s in starts] == ["toolu_0_0", "toolu_custom"]
    assert [s["content_block"]["input"] for s in starts] == [{}, {}]
    json_parts: dict[int, str] = {}
    for name, data in events:
        if name == "content_block_delta":
            assert data["delta"]["type"] == "input_json_delta"
            json_parts[data["index"]] = (
                json_parts.get(data["index"], "") + data["delta"]["partial_json"]
            )
    assert json.loads(json_parts[0]) == {"path": f"{WS}/a.txt"}
    assert json.loads(json_parts[1]) == {"path": f"{SKILL}/x"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_anthropic_length_and_broken_stream(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script({"text": "cut", "stop": "length"}, {"text": "half", "stop": "error"}),
        source=None,
        placeholders={},
    )
    url = anthropic_url(model_server, route.token)
    length = anthropic_events(post_reply(url, BODY))
    assert length[-2][1]["delta"]["stop_reason"] == "max_tokens"
    broken = anthropic_events(post_reply(url, BODY))
    assert [n for n, _ in broken][-1] == "error"
    assert "message_stop" not in [n for n, _ in broken]
    assert broken[-1][1]["error"]["type"] == "api_error"


# --- errors and failures ----------------------------------------------------------------


def test_error_interaction_in_each_api_shape(model_server: ScriptedModelServer) -> None:
    for api, url_of in ((OPENAI, openai_url), (ANTHROPIC, anthropic_url)):
        route = model_server.open_route(
            script(
                {"error": {"status": 529, "message": "overloaded at {{workspace}}"}}, {"text": "ok"}
            ),
            source=None,
            placeholders=PLACEHOLDERS,
        )
        reply = post_reply(url_of(model_server, route.token), BODY)
        assert reply.status == 529
        assert reply.content_type == "application/json"
        if api == OPENAI:
            assert reply.json()["error"]["message"] == f"overloaded at {WS}"
        else:
            assert reply.json() == {
                "type": "error",
                "error": {"type": "overloaded_error", "message": f"overloaded at {WS}"},
            }
        # An error interaction is ordinary model behaviour and consumes its turn.
        assert route.failures == []
        assert post_reply(url_of(model_server, route.token), BODY).status == 200
        assert [r.status for r in route.requests] == [529, 200]


def test_exhausted_script_is_a_400_no_host_retries_and_a_failure(
    model_server: ScriptedModelServer,
) -> None:
    source = Path("/suite/cassettes/g/candidate.yaml")
    route = model_server.open_route(script({"text": "only"}), source=source, placeholders={})
    url = anthropic_url(model_server, route.token)
    assert post_reply(url, BODY).status == 200
    reply = post_reply(url, BODY)
    assert reply.status == 400
    expected = f"script exhausted: {source} has 1 interaction, request 2 has none"
    assert reply.json()["error"]["message"] == expected
    assert reply.json()["type"] == "error"  # Anthropic error shape for an Anthropic path
    assert len(route.failures) == 1
    assert route.failures[0].reason == "script-exhausted"
    assert route.failures[0].message == expected
    assert route.failures[0].interaction == 1
    assert [r.interaction for r in route.requests] == [0, None]
    assert route.consumed == 1


def test_exhausted_openai_uses_openai_shape(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script({"text": "a"}, {"text": "b"}), source=None, placeholders={}
    )
    url = openai_url(model_server, route.token)
    post_reply(url, BODY)
    post_reply(url, BODY)
    reply = post_reply(url, BODY)
    assert reply.status == 400
    assert reply.json()["error"]["message"] == (
        "script exhausted: /suite/cassettes/g/baseline.yaml has 2 interactions, request 3 has none"
    )


def test_missing_script_fails_every_request(model_server: ScriptedModelServer) -> None:
    expected_file = Path("/suite/cassettes/g/baseline-trial2.yaml")
    route = model_server.open_route(None, source=expected_file, placeholders={})
    reply = post_reply(openai_url(model_server, route.token), BODY)
    assert reply.status == 400
    assert str(expected_file) in reply.json()["error"]["message"]
    assert [f.reason for f in route.failures] == ["missing-script"]


def test_unknown_token_is_500_and_a_stray_failure() -> None:
    with ScriptedModelServer() as server:
        reply = post_reply(openai_url(server, "not-a-real-token"), BODY)
        assert reply.status == 500
        assert "unknown route" in reply.json()["error"]["message"]
        assert [f.reason for f in server.stray_failures] == ["unknown-route"]


def test_a_client_gone_mid_request_prints_nothing_and_the_server_serves_on(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with ScriptedModelServer() as server:
        route = server.open_route(
            script({"text": "a"}, {"text": "b"}), source=None, placeholders={}
        )
        address = urlsplit(server.base_url)
        with socket.create_connection((address.hostname, address.port)) as client:
            client.sendall(
                f"POST {urlsplit(openai_url(server, route.token)).path} HTTP/1.1\r\n"
                'Host: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{"partial'.encode()
            )
            # Closed with a reset while the server still reads the body (a killed host).
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        reply = post_reply(openai_url(server, route.token), BODY)
        # The dropped request took no answer: the next one gets the script's first.
        assert deltas(openai_chunks(reply), "content") == "a"
        assert [(r.interaction, r.status) for r in route.requests] == [(0, 200)]
        assert route.failures == []
        # The standard library's report comes from the dropped connection's own thread.
        deadline = time.monotonic() + 1.0
        printed = ""
        while time.monotonic() < deadline and not printed:
            printed = capfd.readouterr().err
            time.sleep(0.05)
        assert printed == ""


def test_unsupported_path_is_404_and_a_failure(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(script({"text": "a"}), source=None, placeholders={})
    reply = post_reply(f"{model_server.base_url}/r/{route.token}/v1/embeddings", BODY)
    assert reply.status == 404
    assert [f.reason for f in route.failures] == ["unsupported-path"]
    # The failed request consumed nothing.
    assert post_reply(openai_url(model_server, route.token), BODY).status == 200


def test_bad_json_body_is_400_and_a_failure(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(script({"text": "a"}), source=None, placeholders={})
    reply = post_reply(openai_url(model_server, route.token), None, raw=b"{not json")
    assert reply.status == 400
    assert [f.reason for f in route.failures] == ["bad-request"]


def test_closed_route_answers_410_and_records(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script({"text": "a"}, {"text": "b"}), source=None, placeholders={}
    )
    assert post_reply(openai_url(model_server, route.token), BODY).status == 200
    route.close()
    assert route.closed
    reply = post_reply(openai_url(model_server, route.token), BODY)
    assert reply.status == 410
    assert [f.reason for f in route.failures] == ["route-closed"]


# --- recording, matching, routing -------------------------------------------------------


def test_requests_are_recorded_with_normalised_hash(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script({"text": "a"}, {"text": "b"}), source=None, placeholders=PLACEHOLDERS
    )
    bodies = [
        {
            "model": "m",
            "messages": [{"role": "system", "content": f"cwd {WS}\nCurrent date: 2031-02-03"}],
        },
        {"model": "m", "messages": [{"role": "tool", "content": f"{SKILL}/SKILL.md"}]},
    ]
    post_reply(openai_url(model_server, route.token), bodies[0])
    post_reply(anthropic_url(model_server, route.token), bodies[1])
    assert [(r.index, r.api, r.path, r.status) for r in route.requests] == [
        (0, OPENAI, "/v1/chat/completions", 200),
        (1, ANTHROPIC, "/v1/messages", 200),
    ]
    assert [r.body for r in route.requests] == bodies
    for recorded, body in zip(route.requests, bodies, strict=True):
        assert recorded.sha256 == request_sha256(normalise_request(body, PLACEHOLDERS))
    assert normalise_request(bodies[0], PLACEHOLDERS)["messages"][0]["content"] == (
        "cwd {{workspace}}\nCurrent date: {{date}}"
    )


def test_body_match_accepts_same_request_and_rejects_other(
    model_server: ScriptedModelServer,
) -> None:
    # The same request in another run (other paths, other day) hashes the same.
    other_run = {"workspace": "/other/ws", "skill:0": "/other/skill"}
    recorded_body = {
        "model": "m",
        "messages": [{"role": "user", "content": "in /other/ws\nCurrent date: 2020-01-01"}],
    }
    sha = request_sha256(normalise_request(recorded_body, other_run))
    cassette = parse_script(
        {
            "version": 1,
            "match": "body",
            "interactions": [
                {"request": {"sha256": sha}, "response": {"text": "matched"}},
                {"request": {"sha256": sha}, "response": {"text": "never"}},
            ],
        }
    )
    route = model_server.open_route(
        cassette, source=Path("/c/g/baseline.yaml"), placeholders=PLACEHOLDERS
    )
    url = openai_url(model_server, route.token)
    same = {
        "model": "m",
        "messages": [{"role": "user", "content": f"in {WS}\nCurrent date: 2031-12-31"}],
    }
    assert deltas(openai_chunks(post_reply(url, same)), "content") == "matched"
    different = {"model": "m", "messages": [{"role": "user", "content": "something else"}]}
    reply = post_reply(url, different)
    assert reply.status == 400
    assert (
        "request mismatch: /c/g/baseline.yaml interactions[1]" in reply.json()["error"]["message"]
    )
    assert [f.reason for f in route.failures] == ["request-mismatch"]


def test_route_base_urls(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(None, source=None, placeholders={})
    assert model_server.base_url.startswith("http://127.0.0.1:")
    assert route.base_url(OPENAI) == f"{model_server.base_url}/r/{route.token}/v1"
    assert route.base_url(ANTHROPIC) == f"{model_server.base_url}/r/{route.token}"
    assert route.token.replace("-", "").replace("_", "").isalnum()
    assert model_server.open_route(None, source=None, placeholders={}).token != route.token
    with pytest.raises(ValueError, match="unsupported api"):
        route.base_url("google-generative-ai")


def test_query_string_is_ignored(model_server: ScriptedModelServer) -> None:
    # The Anthropic SDK's beta client posts to /v1/messages?beta=true.
    route = model_server.open_route(script({"text": "q"}), source=None, placeholders={})
    reply = post_reply(anthropic_url(model_server, route.token) + "?beta=true", BODY)
    assert reply.status == 200
    assert route.requests[0].path == "/v1/messages"


def test_chunked_request_body_is_read(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(script({"text": "chunked ok"}), source=None, placeholders={})
    parts = urlsplit(openai_url(model_server, route.token))
    assert parts.hostname is not None
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    payload = json.dumps(BODY).encode()
    connection.request(
        "POST",
        parts.path,
        body=iter([payload[:10], payload[10:]]),
        headers={"Content-Type": "application/json"},
        encode_chunked=True,
    )
    response = connection.getresponse()
    reply = Reply(response.status, response.headers["Content-Type"], response.read())
    connection.close()
    assert deltas(openai_chunks(reply), "content") == "chunked ok"
    assert route.requests[0].body == BODY


def test_two_routes_concurrently_each_get_their_script(model_server: ScriptedModelServer) -> None:
    turns = 4
    routes = {
        name: model_server.open_route(
            script(*({"text": f"{name}-{i}"} for i in range(turns))), source=None, placeholders={}
        )
        for name in ("left", "right")
    }
    barrier = threading.Barrier(2)
    seen: dict[str, list[str]] = {"left": [], "right": []}
    errors: list[BaseException] = []

    def client(name: str, url_of: Any) -> None:
        try:
            for _ in range(turns):
                barrier.wait(timeout=30)
                reply = post_reply(url_of(model_server, routes[name].token), BODY)
                if url_of is openai_url:
                    seen[name].append(deltas(openai_chunks(reply), "content"))
                else:
                    events = anthropic_events(reply)
                    seen[name].append(
                        "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
                    )
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)
            barrier.abort()

    threads = [
        threading.Thread(target=client, args=("left", openai_url)),
        threading.Thread(target=client, args=("right", anthropic_url)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert seen["left"] == [f"left-{i}" for i in range(turns)]
    assert seen["right"] == [f"right-{i}" for i in range(turns)]
    assert [len(r.requests) for r in routes.values()] == [turns, turns]
    assert all(r.failures == [] for r in routes.values())


def test_latency_interaction_still_answers(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(
        script({"text": "slow", "latency_ms": 30}), source=None, placeholders={}
    )
    assert (
        deltas(openai_chunks(post_reply(openai_url(model_server, route.token), BODY)), "content")
        == "slow"
    )


def test_server_stop_releases_port() -> None:
    server = ScriptedModelServer()
    with server:
        url = server.base_url
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/r/x/v1/messages", data=b"{}", timeout=5)
