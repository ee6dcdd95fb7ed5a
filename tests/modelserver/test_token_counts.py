"""Token counts (`POST /v1/messages/count_tokens`, Claude Code's question before a large Read):
a scripted route estimates them, a recording route records them beside the interactions, and a
replay answers the recorded ones; none is a model call."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_skill_eval.modelserver.cassette import load_existing
from pytest_skill_eval.modelserver.script import (
    Interaction,
    Script,
    ScriptedResponse,
    ScriptError,
)
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.modelserver.test_models_record import (
    CANARY,
    anthropic_recording,
    anthropic_tool_answer,
    files_containing,
    sse,
)
from tests.support.http import anthropic_url, post

ANTHROPIC = "anthropic-messages"
StartUpstream = Callable[[list[Any]], Any]


def count_body(text: str) -> dict[str, Any]:
    """A count request as Claude Code sends one for a file it reads."""
    return {"model": "scripted", "messages": [{"role": "user", "content": text}], "tools": []}


def count_url(server: ScriptedModelServer, token: str) -> str:
    return f"{server.base_url}/r/{token}/v1/messages/count_tokens?beta=true"


def one_reply() -> Script:
    return Script(interactions=(Interaction(ScriptedResponse(text="done")),))


def test_a_scripted_count_is_a_quarter_of_the_characters_and_no_model_call(
    model_server: ScriptedModelServer,
) -> None:
    with model_server.open_route(one_reply()) as route:
        status, body = post(count_url(model_server, route.token), count_body("x" * 100_001))
        again = post(count_url(model_server, route.token), count_body("é" * 8))
    # Every string of system, messages and tools counts: the role "user" too.
    assert (status, json.loads(body)) == (200, {"input_tokens": 25_002})
    assert again == (200, b'{"input_tokens": 3}')
    assert route.failures == []
    assert route.requests == []
    assert route.consumed == 0  # the script still has its reply
    assert [(c.index, c.path, c.status) for c in route.counts] == [
        (0, "/v1/messages/count_tokens", 200),
        (1, "/v1/messages/count_tokens", 200),
    ]


def test_a_count_to_a_closed_route_fails_like_a_model_request(
    model_server: ScriptedModelServer,
) -> None:
    route = model_server.open_route(one_reply())
    route.close()
    status, _ = post(count_url(model_server, route.token), count_body("late"))
    assert status == 410
    assert [f.reason for f in route.failures] == ["route-closed"]


def test_recorded_counts_are_written_and_replayed_in_order(
    model_server: ScriptedModelServer, fake_upstream: StartUpstream, tmp_path: Path
) -> None:
    answers = [
        (200, "application/json", [b'{"input_tokens": 31337}']),
        sse(anthropic_tool_answer("a.txt")),
        (200, "application/json", [b'{"input_tokens": 7}']),
    ]
    upstream = fake_upstream(answers)
    cassette = tmp_path / "a.yaml"
    route = anthropic_recording(model_server, upstream, cassette, mode="all")
    first = post(count_url(model_server, route.token), count_body("a large file"))
    message = {"model": "claude", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    assert post(anthropic_url(model_server, route.token), message)[0] == 200
    second = post(count_url(model_server, route.token), count_body("another"))
    assert (first, second) == ((200, b'{"input_tokens": 31337}'), (200, b'{"input_tokens": 7}'))
    count_path = "/v1/messages/count_tokens"
    assert [r.path for r in upstream.requests] == [count_path, "/v1/messages", count_path]
    assert upstream.requests[0].headers["x-api-key"] == CANARY
    route.close()
    assert route.failures == []
    assert files_containing(tmp_path, CANARY) == []
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    assert [c["input_tokens"] for c in data["token_counts"]] == [31337, 7]
    assert data["token_counts"][0]["request"]["body"] == count_body("a large file")
    assert len(data["interactions"]) == 1

    script = load_existing(cassette)
    assert script is not None
    with model_server.open_route(script) as replay:
        assert post(count_url(model_server, replay.token), count_body("a large file")) == first
        changed = post(count_url(model_server, replay.token), count_body("changed"))
        past_end = post(count_url(model_server, replay.token), count_body("x" * 40))
    assert changed[0] == 400
    assert [f.reason for f in replay.failures] == ["request-mismatch"]
    assert "token_counts[1]" in replay.failures[0].message
    assert past_end == (200, b'{"input_tokens": 11}')  # none recorded: the estimate


def test_token_counts_in_a_script_are_validated() -> None:
    base = {"version": 1, "interactions": [{"response": {"text": "hi"}}]}
    script = parse_script({**base, "token_counts": [{"input_tokens": 12}]})
    assert [c.input_tokens for c in script.token_counts] == [12]
    for bad in ([{"input_tokens": -1}], [{"tokens": 3}], {"input_tokens": 1}):
        with pytest.raises(ScriptError, match=r"token_counts"):
            parse_script({**base, "token_counts": bad})
