"""Recording and replaying real model traffic, over HTTP against fake providers on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import datetime
import http.client
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_skill_eval.modelserver.cassette import cassette_text, load_existing, script_data
from pytest_skill_eval.modelserver.placeholders import normalise_request, request_sha256
from pytest_skill_eval.modelserver.record import RecordingRoute
from pytest_skill_eval.modelserver.route import SCRIPT_FAILURE_STATUS
from pytest_skill_eval.modelserver.script import (
    Interaction,
    RequestNote,
    Script,
    ScriptedResponse,
    StopReason,
    ToolCall,
    Usage,
)
from pytest_skill_eval.modelserver.scriptparse import load_script, parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from pytest_skill_eval.modelserver.streams import parse_stream, stream_parser
from pytest_skill_eval.modelserver.upstream import RecordError, auth_headers
from pytest_skill_eval.modelserver.wire import render_stream
from tests.support.http import anthropic_url, openai_url, post, recording_route

OPENAI = "openai-completions"
ANTHROPIC = "anthropic-messages"
CANARY = "sk-canary-7f3a9c1e5b2d4f60"
PI_KEY = "skill-eval-scripted-key-not-a-variable"
SSE = "text/event-stream"

# The fake_upstream fixture (tests/modelserver/conftest.py) starts a FakeUpstream; conftest is not
# importable, so its type is spelled loosely here.
Upstream = Any
StartUpstream = Callable[[list[Any]], Upstream]


# --- provider-like streams, written out by hand ------------------------------------------


def split(data: bytes, size: int = 37) -> list[bytes]:
    """Cut a stream into pieces that break lines, events and UTF-8 characters, as TCP may."""
    return [data[i : i + size] for i in range(0, len(data), size)]


def openai_stream(*deltas: dict[str, Any], finish: str, usage: dict[str, Any]) -> bytes:
    """An OpenAI chat-completions stream shaped like api.openai.com's."""
    head = {"id": "chatcmpl-A1b2", "object": "chat.completion.chunk", "created": 1767312000}
    head |= {"model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_fake"}
    frames = [
        {
            **head,
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": None, "refusal": None},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
            "usage": None,
        }
    ]
    frames += [
        {
            **head,
            "choices": [{"index": 0, "delta": d, "logprobs": None, "finish_reason": None}],
            "usage": None,
        }
        for d in deltas
    ]
    frames.append(
        {
            **head,
            "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}],
            "usage": None,
        }
    )
    frames.append({**head, "choices": [], "usage": usage})
    body = b"".join(b"data: " + json.dumps(f).encode() + b"\n\n" for f in frames)
    return body + b"data: [DONE]\n\n"


def anthropic_stream(*events: dict[str, Any]) -> bytes:
    """An Anthropic messages stream (event + data lines, as api.anthropic.com sends them)."""
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def openai_tool_answer(path: str) -> bytes:
    return openai_stream(
        {"content": "I'll read "},
        {"content": "the skill ☃."},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_Xyz9",
                    "type": "function",
                    "function": {"name": "read", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": f'th": "{path}"}}'}}]},
        finish="tool_calls",
        usage={
            "prompt_tokens": 1500,
            "completion_tokens": 40,
            "total_tokens": 1540,
            "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    )


def openai_text_answer(text: str) -> bytes:
    return openai_stream(
        {"content": text},
        finish="stop",
        usage={"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35},
    )


def anthropic_tool_answer(path: str) -> bytes:
    half = len(path) // 2
    return anthropic_stream(
        {
            "type": "message_start",
            "message": {
                "id": "msg_01Fake",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 12,
                    "cache_creation_input_tokens": 300,
                    "cache_read_input_tokens": 1000,
                    "output_tokens": 1,
                },
            },
        },
        {"type": "ping"},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Need the skill."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkD"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": "Reading ☃"},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_01A", "name": "read", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": "' + path[:half]},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": path[half:] + '"}'},
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 87},
        },
        {"type": "message_stop"},
    )


def sse(data: bytes) -> tuple[int, str, list[bytes]]:
    return 200, SSE, split(data)


# --- parsers --------------------------------------------------------------------------------


def test_openai_stream_parses_to_neutral_form() -> None:
    parsed = parse_stream(OPENAI, openai_tool_answer("/w/skills/0/SKILL.md"))
    assert parsed.complete
    assert parsed.problems == ()
    assert parsed.response == ScriptedResponse(
        text="I'll read the skill ☃.",
        tool_calls=(ToolCall("read", {"path": "/w/skills/0/SKILL.md"}, "call_Xyz9"),),
        usage=Usage(input=476, output=40, cache_read=1024, cache_write=0),
        stop="tool_use",
    )


def test_anthropic_stream_parses_to_neutral_form() -> None:
    parsed = parse_stream(ANTHROPIC, anthropic_tool_answer("/w/skills/0/SKILL.md"))
    assert parsed.complete
    assert parsed.problems == ()
    assert parsed.response == ScriptedResponse(
        text="Reading ☃",
        thinking="Need the skill.",
        tool_calls=(ToolCall("read", {"path": "/w/skills/0/SKILL.md"}, "toolu_01A"),),
        usage=Usage(input=12, output=87, cache_read=1000, cache_write=300),
        stop="tool_use",
    )


@pytest.mark.parametrize(
    ("api", "data"),
    [
        (OPENAI, openai_tool_answer("/w/ü/SKILL.md")),
        (ANTHROPIC, anthropic_tool_answer("/w/ü/SKILL.md")),
    ],
)
def test_byte_by_byte_feeding_gives_the_same_answer(api: str, data: bytes) -> None:
    parser = stream_parser(api)
    for i in range(len(data)):
        parser.feed(data[i : i + 1])
    assert parser.done
    assert parser.finish() == parse_stream(api, data)


@pytest.mark.parametrize(
    ("api", "data", "problem"),
    [
        (OPENAI, openai_tool_answer("/x").split(b'"finish_reason": "tool_calls"')[0], "ended"),
        (ANTHROPIC, anthropic_tool_answer("/x").split(b"event: message_delta")[0], "ended"),
        (OPENAI, b'{"not": "sse"}', "no server-sent events"),
    ],
)
def test_cut_or_foreign_streams_are_reported(api: str, data: bytes, problem: str) -> None:
    parsed = parse_stream(api, data)
    assert not parsed.complete
    assert any(problem in p for p in parsed.problems)


_words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=80
)
_calls = st.lists(
    st.builds(
        ToolCall,
        name=st.sampled_from(["read", "write", "bash"]),
        arguments=st.dictionaries(
            st.text(min_size=1, max_size=8), st.one_of(_words, st.integers(-5, 10**6)), max_size=3
        ),
        id=st.uuids().map(lambda u: f"call_{u.hex[:12]}"),
    ),
    max_size=3,
    unique_by=lambda call: call.id,
).map(tuple)


@st.composite
def responses(draw: st.DrawFn) -> ScriptedResponse:
    calls = draw(_calls)
    first: StopReason = "tool_use" if calls else "stop"
    stop = draw(st.sampled_from([first, "length", "error"]))
    usage = draw(st.builds(Usage, *(st.integers(0, 10**6) for _ in range(4))))
    return ScriptedResponse(
        text=draw(st.none() | _words),
        thinking=draw(st.none() | _words),
        tool_calls=calls,
        usage=usage,
        stop=stop,
    )


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(response=responses(), api=st.sampled_from([OPENAI, ANTHROPIC]))
def test_parsing_inverts_the_scripted_renderers(response: ScriptedResponse, api: str) -> None:
    reply = render_stream(api, response, model="m", request_index=3)
    parsed = parse_stream(api, reply.body)
    expected = response
    if api == ANTHROPIC and response.stop == "error":
        # The stream breaks before message_delta, so (as for Pi) only message_start's usage counts.
        expected = dataclasses.replace(
            response, usage=dataclasses.replace(response.usage, output=0)
        )
    assert parsed.response == expected
    assert parsed.problems == ()


# --- recording over HTTP ---------------------------------------------------------------------


def ws_places(root: Path) -> dict[str, str]:
    return {"workspace": str(root / "workspace"), "skill:0": str(root / "skills" / "0")}


def openai_body(places: dict[str, str], user: str) -> dict[str, Any]:
    """A request body shaped like Pi's openai-completions requests."""
    system = (
        "You are an expert coding assistant.\nCurrent date: 2026-01-02\n"
        f"Current working directory: {places['workspace']}"
    )
    return {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": [{"type": "text", "text": user}]},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def files_containing(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_record_all_relays_the_stream_and_writes_a_cassette(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    places = ws_places(tmp_path / "run1")
    answer = openai_tool_answer(f"{places['skill:0']}/SKILL.md")
    upstream = fake_upstream([sse(answer)])
    cassette = tmp_path / "cassettes" / "g" / "baseline.yaml"
    route = recording_route(
        model_server,
        upstream,
        cassette,
        placeholders=places,
        upstream_headers=auth_headers(OPENAI, CANARY),
    )
    body = openai_body(places, f"Read {places['workspace']}/notes.txt please")
    status, got = post(
        openai_url(model_server, route.token), body, {"Authorization": f"Bearer {PI_KEY}"}
    )
    assert (status, got) == (200, answer)
    [seen] = upstream.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {CANARY}"
    assert PI_KEY not in json.dumps(seen.headers)
    assert seen.body == body
    assert not cassette.exists()  # written when the route is finished
    route.close()
    assert route.failures == []
    assert route.recorded == 1

    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    assert (data["version"], data["match"]) == (1, "order")
    [interaction] = data["interactions"]
    normal = normalise_request(body, places)
    assert interaction["request"] == {
        "api": OPENAI,
        "model": "gpt-4o",
        "sha256": request_sha256(normal),
        "excerpt": "Read {{workspace}}/notes.txt please",
        "body": normal,
    }
    assert "Current working directory: {{workspace}}" in normal["messages"][0]["content"]
    assert interaction["response"] == {
        "text": "I'll read the skill ☃.",
        "tool_calls": [
            {"name": "read", "arguments": {"path": "{{skill:0}}/SKILL.md"}, "id": "call_Xyz9"}
        ],
        "usage": {"input": 476, "output": 40, "cache_read": 1024, "cache_write": 0},
        "stop": "tool_use",
    }
    loaded = load_script(cassette)
    assert loaded.interactions[0].request is not None
    assert route.cassette_sha256 == loaded.sha256
    assert [p.name for p in cassette.parent.iterdir()] == ["baseline.yaml"]  # no tmp left
    assert files_containing(tmp_path, CANARY) == []
    assert all(CANARY not in json.dumps(r.body) for r in route.requests)


def test_relay_streams_before_the_upstream_answer_ends(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    pieces = split(openai_text_answer("streamed"), 50)
    upstream = fake_upstream([(200, SSE, pieces)])
    upstream.gate = threading.Event()
    route = recording_route(model_server, upstream, tmp_path / "c.yaml")
    connection = http.client.HTTPConnection("127.0.0.1", int(model_server.base_url.split(":")[-1]))
    connection.request(
        "POST",
        f"/r/{route.token}/v1/chat/completions",
        body=json.dumps(openai_body(ws_places(tmp_path), "hi")),
        headers={"Content-Type": "application/json"},
    )
    response = connection.getresponse()
    first = b""
    while len(first) < len(pieces[0]):
        first += response.read1(len(pieces[0]) - len(first))
    # The upstream still holds the rest until Pi's side has the first piece.
    upstream.gate.set()
    rest = response.read()
    connection.close()
    route.close()
    assert upstream.gate_opened is True
    assert first + rest == b"".join(pieces)
    assert load_script(tmp_path / "c.yaml").interactions[0].response.text == "streamed"


def test_answer_pi_abandons_is_not_recorded(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    pieces = split(openai_text_answer("never taken whole " * 20), 10)
    upstream = fake_upstream([(200, SSE, pieces)])
    upstream.gate = threading.Event()
    cassette = tmp_path / "c.yaml"
    route = recording_route(model_server, upstream, cassette)
    connection = http.client.HTTPConnection("127.0.0.1", int(model_server.base_url.split(":")[-1]))
    connection.request(
        "POST",
        f"/r/{route.token}/v1/chat/completions",
        body=json.dumps(openai_body(ws_places(tmp_path), "hi")),
        headers={"Content-Type": "application/json"},
    )
    response = connection.getresponse()
    assert response.read1(len(pieces[0]))
    response.close()  # Pi went away mid-answer
    connection.close()
    upstream.gate.set()
    route.close()
    assert [f.reason for f in route.failures] == ["relay-aborted"]
    assert "request 1" in route.failures[0].message
    assert route.recorded == 0
    assert not cassette.exists()


def test_cut_upstream_stream_is_relayed_but_not_recorded(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    places = ws_places(tmp_path)
    cut = anthropic_tool_answer("/x").split(b"event: message_delta")[0]
    upstream = fake_upstream([sse(openai_text_answer("kept")), sse(cut)])
    cassette = tmp_path / "c.yaml"
    route = recording_route(model_server, upstream, cassette)
    url = openai_url(model_server, route.token)
    assert answer_text(post(url, openai_body(places, "one"))[1]) == "kept"
    # An Anthropic stream is not what an OpenAI route expects: nothing in it parses.
    assert post(url, openai_body(places, "two")) == (200, cut)
    route.close()
    [failure] = route.failures
    assert failure.reason == "unrecordable-answer"
    assert failure.message.startswith("the answer to request 2 from http://127.0.0.1:")
    assert "is not recorded" in failure.message
    assert [i.response.text for i in load_script(cassette).interactions] == ["kept"]


def test_anthropic_record_sends_the_evaluator_key_and_pi_headers(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    places = ws_places(tmp_path)
    answer = anthropic_tool_answer(f"{places['workspace']}/a.txt")
    upstream = fake_upstream([sse(answer)])
    cassette = tmp_path / "a.yaml"
    route = anthropic_recording(model_server, upstream, cassette, mode="once", placeholders=places)
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": f"cwd {places['workspace']}"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Read a.txt"}]}],
        "stream": True,
    }
    pi_headers = {
        "x-api-key": PI_KEY,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "fine-grained-tool-streaming-2025-05-14",
    }
    assert post(anthropic_url(model_server, route.token), body, pi_headers) == (200, answer)
    [seen] = upstream.requests
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == CANARY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.headers["anthropic-beta"] == "fine-grained-tool-streaming-2025-05-14"
    assert "authorization" not in seen.headers
    route.close()
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    assert data["match"] == "body"
    [interaction] = data["interactions"]
    assert interaction["request"]["excerpt"] == "Read a.txt"
    assert interaction["request"]["api"] == ANTHROPIC
    assert interaction["response"] == {
        "text": "Reading ☃",
        "thinking": "Need the skill.",
        "tool_calls": [
            {"name": "read", "arguments": {"path": "{{workspace}}/a.txt"}, "id": "toolu_01A"}
        ],
        "usage": {"input": 12, "output": 87, "cache_read": 1000, "cache_write": 300},
        "stop": "tool_use",
    }
    assert files_containing(tmp_path, CANARY) == []


def anthropic_recording(
    server: ScriptedModelServer, upstream: Upstream, cassette: Path, **options: Any
) -> RecordingRoute:
    """A route recording Anthropic traffic from `upstream` with the canary key, by body."""
    return RecordingRoute.open(
        server,
        api=ANTHROPIC,
        upstream_base_url=upstream.base_url,
        cassette_path=cassette,
        upstream_headers=auth_headers(ANTHROPIC, CANARY),
        match="body",
        **options,
    )


def record_one(
    server: ScriptedModelServer,
    start: StartUpstream,
    cassette: Path,
    places: dict[str, str],
    *texts: str,
    match: Any = None,
) -> list[dict[str, Any]]:
    """Record one request per text (each answered by that text); return the bodies sent."""
    upstream = start([sse(openai_text_answer(t)) for t in texts])
    route = recording_route(server, upstream, cassette, placeholders=places, match=match)
    bodies = [
        openai_body(places, f"question {i} in {places['workspace']}") for i in range(len(texts))
    ]
    for body in bodies:
        assert post(openai_url(server, route.token), body)[0] == 200
    route.close()
    upstream.stop()
    assert route.failures == []
    return bodies


def answer_text(reply: bytes) -> str:
    frames = [f for f in reply.decode().split("\n\n") if f.startswith("data: {")]
    chunks = [json.loads(f[len("data: ") :]) for f in frames]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def test_once_replays_what_exists_and_appends_the_rest(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    cassette = tmp_path / "g" / "candidate.yaml"
    record_one(model_server, fake_upstream, cassette, ws_places(tmp_path / "r1"), "first")
    before = yaml.safe_load(cassette.read_text(encoding="utf-8"))["interactions"]

    places = ws_places(tmp_path / "r2")
    upstream = fake_upstream([sse(openai_text_answer("second, live"))])
    existing = load_existing(cassette)
    assert existing is not None
    route = recording_route(
        model_server, upstream, cassette, mode="once", existing=existing, placeholders=places
    )
    url = openai_url(model_server, route.token)
    status, reply = post(url, openai_body(places, "question 0"))
    assert (status, answer_text(reply)) == (200, "first")
    assert upstream.requests == []  # replayed, not forwarded
    status, reply = post(url, openai_body(places, "question 1"))
    assert (status, answer_text(reply)) == (200, "second, live")
    assert len(upstream.requests) == 1
    route.close()
    after = yaml.safe_load(cassette.read_text(encoding="utf-8"))["interactions"]
    assert after[0] == before[0]
    assert len(after) == 2
    assert after[1]["response"]["text"] == "second, live"
    assert after[1]["request"]["excerpt"] == "question 1"
    assert [r.interaction for r in route.requests] == [0, 1]


def test_a_replayed_request_unlike_the_kept_one_is_refused_with_a_status_no_host_retries(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    cassette = tmp_path / "g" / "candidate.yaml"
    record_one(model_server, fake_upstream, cassette, ws_places(tmp_path / "r1"), "first")
    kept = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    cassette.write_text(yaml.safe_dump({**kept, "match": "body"}), encoding="utf-8")
    existing = load_existing(cassette)
    assert existing is not None
    places = ws_places(tmp_path / "r2")
    upstream = fake_upstream([])
    route = recording_route(
        model_server, upstream, cassette, mode="once", existing=existing, placeholders=places
    )
    status, _ = post(openai_url(model_server, route.token), openai_body(places, "another"))
    route.close()
    # A 5xx would be asked again, the retry past the kept answers forwarded to the provider.
    assert status == SCRIPT_FAILURE_STATUS == 400
    assert [f.reason for f in route.failures] == ["request-mismatch"]
    assert upstream.requests == []


def test_once_with_nothing_new_leaves_the_cassette_untouched(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    cassette = tmp_path / "c.yaml"
    record_one(model_server, fake_upstream, cassette, ws_places(tmp_path), "only")
    written = cassette.read_bytes()
    route = RecordingRoute.open(
        model_server,
        api=OPENAI,
        upstream_base_url="http://127.0.0.1:9/v1",
        cassette_path=cassette,
        existing=load_script(cassette),
        mode="once",
    )
    assert (
        post(openai_url(model_server, route.token), openai_body(ws_places(tmp_path), "q"))[0] == 200
    )
    route.close()
    assert route.recorded == 0
    assert cassette.read_bytes() == written


def test_all_rerecords_over_an_existing_cassette(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    cassette = tmp_path / "c.yaml"
    cassette.write_text(
        "version: 1\ninteractions:\n  - response: {text: old one}\n  - response: {text: old two}\n",
        encoding="utf-8",
    )
    upstream = fake_upstream([sse(openai_text_answer("fresh"))])
    route = recording_route(model_server, upstream, cassette, existing=load_script(cassette))
    status, reply = post(
        openai_url(model_server, route.token), openai_body(ws_places(tmp_path), "q")
    )
    assert (status, answer_text(reply)) == (200, "fresh")
    route.close()
    assert len(upstream.requests) == 1
    [only] = load_script(cassette).interactions
    assert only.response.text == "fresh"
    assert only.request is not None


# --- replay failures -------------------------------------------------------------------------


def test_body_mismatch_names_cassette_interaction_and_shows_a_short_diff(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    cassette = tmp_path / "g" / "baseline.yaml"
    recorded = record_one(
        model_server, fake_upstream, cassette, ws_places(tmp_path / "r1"), "a", "b", match="body"
    )
    places = ws_places(tmp_path / "r2")
    route = model_server.open_route(load_script(cassette), source=cassette, placeholders=places)
    url = openai_url(model_server, route.token)
    # The first request is the same one in another directory: it matches.
    same = json.loads(json.dumps(recorded[0]).replace(str(tmp_path / "r1"), str(tmp_path / "r2")))
    assert answer_text(post(url, same)[1]) == "a"
    changed = openai_body(places, "\n".join(f"line {i} changed" for i in range(100)))
    status, reply = post(url, changed)
    assert status == 400
    [failure] = route.failures
    assert failure.reason == "request-mismatch"
    assert failure.interaction == 1
    head, *diff = failure.message.split("\n")
    assert head.startswith(f"request mismatch: {cassette} interactions[1]")
    assert "request 2" in head
    assert json.loads(reply)["error"]["message"] == head
    assert 10 < len(diff) <= 40
    assert diff[0] == "--- recorded interactions[1]"
    assert diff[1] == "+++ request 2"
    assert '-     "text": "question 1 in {{workspace}}",' in diff
    assert '+      "line 0 changed",' in diff
    assert diff[-1].startswith("... ")
    assert diff[-1].endswith("more diff lines")


def test_request_past_the_end_fails_naming_the_cassette(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    cassette = tmp_path / "g" / "baseline.yaml"
    places = ws_places(tmp_path)
    record_one(model_server, fake_upstream, cassette, places, "only")
    route = model_server.open_route(load_script(cassette), source=cassette, placeholders=places)
    url = openai_url(model_server, route.token)
    assert post(url, openai_body(places, "one"))[0] == 200
    status, reply = post(url, openai_body(places, "two"))
    assert status == 400
    [failure] = route.failures
    assert failure.reason == "script-exhausted"
    assert failure.message == (
        f"script exhausted: {cassette} has 1 interaction, request 2 has none"
    )
    assert json.loads(reply)["error"]["message"] == failure.message


def test_missing_cassette_fails_naming_the_file(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "g" / "candidate.yaml"
    assert load_existing(cassette) is None
    route = model_server.open_route(None, source=cassette, placeholders={})
    status, _ = post(openai_url(model_server, route.token), openai_body(ws_places(tmp_path), "q"))
    assert status == 400
    [failure] = route.failures
    assert failure.reason == "missing-script"
    assert f"no script: {cassette} does not exist" in failure.message


# --- refusals, errors, secrets ---------------------------------------------------------------


@pytest.mark.parametrize("api", ["google-generative-ai", "bedrock"])
def test_other_api_kinds_are_refused_by_name(
    model_server: ScriptedModelServer, tmp_path: Path, api: str
) -> None:
    with pytest.raises(RecordError, match=f"cannot record model traffic of api '{api}'"):
        RecordingRoute.open(
            model_server,
            api=api,
            upstream_base_url="https://provider.invalid",
            cassette_path=tmp_path / "c.yaml",
        )
    with pytest.raises(
        RecordError, match="supports openai-completions, anthropic-messages, openai-responses"
    ):
        auth_headers(api, CANARY)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "none"}, "record mode must be one of once, all, got 'none'"),
        ({"upstream_base_url": "ftp://x"}, "'ftp://x' is not an http(s) URL"),
        ({"match": "fuzzy"}, "match must be one of order, body, got 'fuzzy'"),
    ],
)
def test_bad_recording_settings_are_refused(
    model_server: ScriptedModelServer, tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    settings_: dict[str, Any] = {
        "api": OPENAI,
        "upstream_base_url": "http://127.0.0.1:9/v1",
        "cassette_path": tmp_path / "c.yaml",
    }
    with pytest.raises(RecordError) as caught:
        RecordingRoute.open(model_server, **(settings_ | kwargs))
    assert message in str(caught.value)


def test_upstream_error_is_recorded_with_the_key_redacted(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    error = {"error": {"message": f"Incorrect API key provided: {CANARY}.", "type": "auth"}}
    upstream = fake_upstream([(401, "application/json", [json.dumps(error).encode()])])
    cassette = tmp_path / "c.yaml"
    route = recording_route(
        model_server, upstream, cassette, upstream_headers=auth_headers(OPENAI, CANARY)
    )
    status, reply = post(
        openai_url(model_server, route.token), openai_body(ws_places(tmp_path), "q")
    )
    route.close()
    assert status == 401
    assert [r.status for r in route.requests] == [401]
    assert json.loads(reply)["error"]["message"] == "Incorrect API key provided: [redacted]."
    [interaction] = load_script(cassette).interactions
    assert interaction.response.error is not None
    assert interaction.response.error.status == 401
    assert interaction.response.error.message == "Incorrect API key provided: [redacted]."
    assert files_containing(tmp_path, CANARY) == []


def test_unreachable_upstream_is_a_located_failure_and_writes_nothing(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    upstream = fake_upstream([])
    base = f"{upstream.base_url}/v1"
    upstream.stop()
    cassette = tmp_path / "c.yaml"
    route = RecordingRoute.open(
        model_server, api=OPENAI, upstream_base_url=base, cassette_path=cassette, mode="all"
    )
    status, reply = post(
        openai_url(model_server, route.token), openai_body(ws_places(tmp_path), "q")
    )
    route.close()
    assert status == 502
    assert [r.status for r in route.requests] == [502]
    [failure] = route.failures
    assert failure.reason == "upstream-unreachable"
    assert f"{base}/chat/completions" in failure.message
    assert "request 1" in failure.message
    assert json.loads(reply)["error"]["message"] == failure.message
    assert route.recorded == 0
    assert not cassette.exists()


def test_wrong_wire_format_is_refused_by_a_recording_route(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    route = RecordingRoute.open(
        model_server,
        api=ANTHROPIC,
        upstream_base_url="http://127.0.0.1:9",
        cassette_path=tmp_path / "c.yaml",
    )
    status, _ = post(openai_url(model_server, route.token), openai_body(ws_places(tmp_path), "q"))
    route.close()
    assert status == 404
    assert [f.reason for f in route.failures] == ["unsupported-path"]
    with pytest.raises(ValueError, match="serves anthropic-messages"):
        route.base_url(OPENAI)


# --- normalisation details used by replay ----------------------------------------------------


def test_thinking_signatures_do_not_change_the_request_hash() -> None:
    def body(signature: str) -> dict[str, Any]:
        block = {"type": "thinking", "thinking": "hm", "signature": signature}
        return {"messages": [{"role": "assistant", "content": [block]}]}

    assert request_sha256(normalise_request(body("EqQBreal"), {})) == request_sha256(
        normalise_request(body("scripted-signature-0"), {})
    )
    text_block = {"messages": [{"role": "user", "content": [{"type": "text", "signature": "x"}]}]}
    assert normalise_request(text_block, {}) == text_block


def test_date_placeholder_is_filled_with_today_on_replay(model_server: ScriptedModelServer) -> None:
    script = parse_script(
        {"version": 1, "interactions": [{"response": {"text": "Current date: {{date}}"}}]}
    )
    route = model_server.open_route(script, source=None, placeholders={})
    _, reply = post(openai_url(model_server, route.token), {"model": "m", "messages": []})
    assert answer_text(reply) == f"Current date: {datetime.date.today().isoformat()}"


# --- end to end with the real Pi (4 launches) -----------------------------------------------

# The pi_launcher fixture (tests/modelserver/conftest.py) returns conftest.launch_pi.
LaunchPi = Callable[..., Any]

SKILL_TEXT = "# Changelog skill\nAlways add a CHANGELOG-MARKER-31 entry.\n"
PROMPT = "Read the changelog skill and tell me its rule."
PI_APIS = [
    pytest.param(OPENAI, "skill-eval", "scripted", id=OPENAI),
    # A built-in provider name, as a skill author would declare it.
    pytest.param(ANTHROPIC, "anthropic", "claude-sonnet-4-5", id=ANTHROPIC),
]


def anthropic_text_answer(text: str) -> bytes:
    return anthropic_stream(
        {
            "type": "message_start",
            "message": {
                "id": "msg_02Fake",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 40, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    )


def tool_result_text(api: str, body: dict[str, Any]) -> str:
    """The text of the tool result Pi sent back (as a real model would read it)."""
    for message in body["messages"]:
        if api == OPENAI and message["role"] == "tool":
            return str(message["content"])
        if api == ANTHROPIC and isinstance(message["content"], list):
            for part in message["content"]:
                if part["type"] == "tool_result":
                    content = part["content"]
                    if isinstance(content, str):
                        return content
                    return "".join(c["text"] for c in content if c["type"] == "text")
    raise AssertionError("no tool result in the request")


def run_dirs(root: Path) -> dict[str, Path]:
    dirs = {
        "workspace": root / "workspace",
        "skill": root / "skills" / "0",
        "home": root / "home",
        "agent": root / "agent",
    }
    dirs["workspace"].mkdir(parents=True)
    dirs["skill"].mkdir(parents=True)
    (dirs["skill"] / "SKILL.md").write_text(SKILL_TEXT, encoding="utf-8")
    return dirs


def activity(run: Any) -> list[tuple[str, dict[str, Any], bool, Any]]:
    ends = {e["toolCallId"]: e for e in run.of_type("tool_execution_end")}
    return [
        (
            s["toolName"],
            s["args"],
            ends[s["toolCallId"]]["isError"],
            ends[s["toolCallId"]]["result"]["content"],
        )
        for s in run.of_type("tool_execution_start")
    ]


def final_text(run: Any) -> str:
    last = run.assistant_messages()[-1]
    return "".join(p["text"] for p in last["content"] if p["type"] == "text")


@pytest.mark.pi
@pytest.mark.parametrize(("api", "provider", "model_id"), PI_APIS)
def test_real_pi_recording_replays_in_another_directory(
    model_server: ScriptedModelServer,
    fake_upstream: StartUpstream,
    pi_launcher: LaunchPi,
    tmp_path: Path,
    api: str,
    provider: str,
    model_id: str,
) -> None:
    first = run_dirs(tmp_path / "record")
    skill_file = f"{first['skill']}/SKILL.md"

    def final(request: Any) -> tuple[int, str, list[bytes]]:
        # Like a model, answer from the tool result Pi sent.
        rule = tool_result_text(api, request.body).splitlines()[1]
        text = f"The skill says: {rule}"
        return sse(openai_text_answer(text) if api == OPENAI else anthropic_text_answer(text))

    tool_answer = openai_tool_answer if api == OPENAI else anthropic_tool_answer
    upstream = fake_upstream([sse(tool_answer(skill_file)), final])
    cassette = tmp_path / "cassettes" / "g" / "baseline.yaml"
    recording = RecordingRoute.open(
        model_server,
        api=api,
        upstream_base_url=upstream.base_url + ("/v1" if api == OPENAI else ""),
        cassette_path=cassette,
        mode="all",
        placeholders={"workspace": str(first["workspace"]), "skill:0": str(first["skill"])},
        upstream_headers=auth_headers(api, CANARY),
        match="body",
    )
    recorded = pi_launcher(
        recording,
        PROMPT,
        api=api,
        provider=provider,
        model_id=model_id,
        workspace=first["workspace"],
        home=first["home"],
        agent=first["agent"],
    )
    upstream.stop()
    assert recorded.returncode == 0, recorded.stderr
    assert recording.failures == []
    expected_final = "The skill says: Always add a CHANGELOG-MARKER-31 entry."
    assert final_text(recorded) == expected_final
    assert activity(recorded) == [
        ("read", {"path": skill_file}, False, [{"type": "text", "text": SKILL_TEXT}])
    ]
    # The provider got the evaluator's key on every request, never Pi's placeholder.
    assert len(upstream.requests) == 2
    key_header = "authorization" if api == OPENAI else "x-api-key"
    expected_key = f"Bearer {CANARY}" if api == OPENAI else CANARY
    assert [r.headers[key_header] for r in upstream.requests] == [expected_key] * 2
    assert all(PI_KEY not in json.dumps(r.headers) for r in upstream.requests)
    call = load_script(cassette).interactions[0].response.tool_calls[0]
    assert call.arguments == {"path": "{{skill:0}}/SKILL.md"}

    second = run_dirs(tmp_path / "replay")
    replay = model_server.open_route(
        load_script(cassette),
        source=cassette,
        placeholders={"workspace": str(second["workspace"]), "skill:0": str(second["skill"])},
    )
    replayed = pi_launcher(
        replay,
        PROMPT,
        api=api,
        provider=provider,
        model_id=model_id,
        workspace=second["workspace"],
        home=second["home"],
        agent=second["agent"],
    )
    assert replayed.returncode == 0, replayed.stderr
    # `match: body` passed: Pi's requests in the new directory normalise to the recorded ones.
    assert replay.failures == []
    assert [r.status for r in replay.requests] == [200, 200]
    assert activity(replayed) == [
        (
            "read",
            {"path": f"{second['skill']}/SKILL.md"},
            False,
            [{"type": "text", "text": SKILL_TEXT}],
        )
    ]
    assert final_text(replayed) == expected_final
    assert len(upstream.requests) == 2
    # The canary key is nowhere on disk, nor in what Pi printed or the routes kept.
    assert files_containing(tmp_path, CANARY) == []
    assert CANARY not in recorded.stderr + json.dumps(recorded.events)
    assert all(CANARY not in json.dumps(r.body) for r in recording.requests + replay.requests)


_awkward = st.text(
    alphabet=st.sampled_from(
        [
            "a",
            " ",
            "\n",
            "\t",
            "\r",
            "#",
            ":",
            "'",
            '"',
            "|",
            "-",
            "é",
            "\u2028",
            "{",
            "\x85",
            "\ufeff",
        ]
    ),
    max_size=30,
)


@settings(max_examples=300)
@given(text=_awkward, thinking=st.none() | _awkward, argument=_awkward)
def test_cassette_text_loads_back_equal(text: str, thinking: str | None, argument: str) -> None:
    response = ScriptedResponse(
        text=text,
        thinking=thinking,
        tool_calls=(ToolCall("read", {"path": argument, "n": [1, None, True]}, "c1"),),
        stop="tool_use",
    )
    data = script_data(
        Script(interactions=(Interaction(response, RequestNote(body={"messages": [argument]})),))
    )
    loaded = yaml.safe_load(cassette_text(data))
    assert loaded == data
    assert parse_script(loaded).interactions[0].response == response
