"""Placeholder filling in responses and normalisation of requests."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_skill_eval.modelserver.placeholders import (
    canonical_json,
    fill_response,
    fill_text,
    normalise_request,
    request_sha256,
)
from pytest_skill_eval.modelserver.script import ErrorReply, ScriptedResponse, ToolCall

PLACES = {"workspace": "/r/ws", "skill:0": "/r/ws/.skills/0", "context:1": "/r/ctx/1"}


def test_fill_text_known_and_unknown() -> None:
    text = "{{workspace}}/a {{skill:0}} {{context:1}} {{context:2}} {{ workspace }} {x}"
    assert (
        fill_text(text, PLACES)
        == "/r/ws/a /r/ws/.skills/0 /r/ctx/1 {{context:2}} {{ workspace }} {x}"
    )


def test_fill_response_every_string() -> None:
    response = ScriptedResponse(
        text="in {{workspace}}",
        thinking="think {{skill:0}}",
        tool_calls=(
            ToolCall(
                name="read",
                arguments={
                    "path": "{{workspace}}/f",
                    "list": ["{{context:1}}", 1, {"k": "{{workspace}}"}],
                },
                id="id-{{workspace}}",
            ),
        ),
        stop="tool_use",
    )
    filled = fill_response(response, PLACES)
    assert filled.text == "in /r/ws"
    assert filled.thinking == "think /r/ws/.skills/0"
    assert filled.tool_calls[0].arguments == {
        "path": "/r/ws/f",
        "list": ["/r/ctx/1", 1, {"k": "/r/ws"}],
    }
    assert filled.tool_calls[0].id == "id-/r/ws"
    assert filled.stop == "tool_use"
    # The script's own response is untouched, so a route can be replayed twice.
    assert response.tool_calls[0].arguments["path"] == "{{workspace}}/f"


def test_fill_response_error_message() -> None:
    response = ScriptedResponse(error=ErrorReply(503, "down at {{workspace}}"), stop="error")
    error = fill_response(response, PLACES).error
    assert error is not None
    assert error.message == "down at /r/ws"


def test_normalise_longest_path_first_and_whole_names_only() -> None:
    body = {
        "model": "m",
        "messages": [
            {
                "role": "system",
                "content": "Current date: 2026-11-30\nCurrent working directory: /r/ws",
            },
            {
                "role": "user",
                "content": ["/r/ws/.skills/0/SKILL.md", "/r/ws2/x", "/r/ws.bak", "/r/ws-old"],
            },
            {"role": "tool", "content": '{"path":"/r/ws/a.txt"}'},
        ],
        "max_completion_tokens": 4096,
    }
    normal = normalise_request(body, PLACES)
    assert normal["messages"][0]["content"] == (
        "Current date: {{date}}\nCurrent working directory: {{workspace}}"
    )
    assert normal["messages"][1]["content"] == [
        "{{skill:0}}/SKILL.md",
        "/r/ws2/x",
        "{{workspace}}.bak",
        "/r/ws-old",
    ]
    assert normal["messages"][2]["content"] == '{"path":"{{workspace}}/a.txt"}'
    assert normal["max_completion_tokens"] == 4096
    # The input body is not modified.
    assert body["messages"][0]["content"].startswith("Current date: 2026-11-30")  # type: ignore[index]


def test_request_sha256_is_canonical() -> None:
    a = {"b": [1, {"y": 2, "x": "é"}], "a": None}
    b = {"a": None, "b": [1, {"x": "é", "y": 2}]}
    assert request_sha256(a) == request_sha256(b)
    assert canonical_json(a) == '{"a":null,"b":[1,{"x":"é","y":2}]}'
    assert request_sha256(a) != request_sha256({"a": None, "b": [1, {"x": "e", "y": 2}]})
    assert len(request_sha256(a)) == 64


def test_same_request_in_two_runs_hashes_the_same() -> None:
    run1 = {"workspace": "/tmp/a/ws"}
    run2 = {"workspace": "/tmp/b/ws"}
    body1 = {"messages": [{"content": "Current date: 2026-01-01 cwd /tmp/a/ws"}]}
    body2 = {"messages": [{"content": "Current date: 2027-05-05 cwd /tmp/b/ws"}]}
    assert request_sha256(normalise_request(body1, run1)) == request_sha256(
        normalise_request(body2, run2)
    )


_BIG_WORD = """
import json, sys
from pytest_skill_eval.modelserver.placeholders import normalise_request
home = "/tmp/skill-eval-claude-code-ab12cd_9"
body = {"content": ["x" * 3_000_000, f"see {home}/SKILL.md", f"'{home}/a'"]}
print(json.dumps(normalise_request(body, {})["content"][1:]))
print(len(normalise_request(body, {})["content"][0]))
"""


def test_a_megabyte_word_in_a_request_is_normalised_in_one_pass() -> None:
    # A file's content in a tool call is one long word: the host-home pattern once scanned it
    # from each of its characters, holding the GIL for hours (not even the watchdog could run).
    # The timeout only guards against that hang.
    try:
        done = subprocess.run(
            [sys.executable, "-c", _BIG_WORD], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail("normalising a request with a 3 MB word did not finish")
    assert done.returncode == 0, done.stderr
    shown, size = done.stdout.splitlines()
    assert json.loads(shown) == ["see {{host_home}}/SKILL.md", "'{{host_home}}/a'"]
    assert size == "3000000"
