"""Codex's Responses requests: per-run values normalised away, excerpts and context observed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.modelserver.bodies import observations, request_context, request_excerpt
from pytest_skill_eval.modelserver.placeholders import normalise_request, request_sha256

DATA = Path(__file__).parent / "data" / "codex"
WS = "<scratch>/cx/wsg"
THREAD = "01a2308b-0fc2-7f13-99e4-1f8871b0ac23"
INSTALL = "6593cbd4-02fe-4a28-bb1a-f406541de859"


def captured(name: str = "resume-req.json") -> dict[str, Any]:
    body = json.loads((DATA / name).read_text(encoding="utf-8"))["body"]
    assert isinstance(body, dict)
    return body


def another_run(body: dict[str, Any], workspace: str) -> dict[str, Any]:
    """The same request as a later run on another machine would send it."""
    text = json.dumps(body)
    for old, new in (
        (THREAD, "01b9ffff-1111-7222-8333-944455556666"),
        (INSTALL, "0badc0de-0000-4000-8000-000000000001"),
        ("01a2308b-", "01b9ffff-"),  # every other time-ordered id of that run
        ("2026-12-01", "2027-03-04"),
        ("Etc/UTC", "Europe/Berlin"),
        (WS, workspace),
        ("Chunk ID: 31d6d1", "Chunk ID: 9f00aa"),
        ("Wall time: 0.0000 seconds", "Wall time: 0.0131 seconds"),
        ("1796110751308", "1800000000000"),
    ):
        assert old in text, old
        text = text.replace(old, new)
    again = json.loads(text)
    # An answer with reasoning makes Codex send the (opaque, encrypted) item back.
    again["input"].insert(
        5, {"type": "reasoning", "id": "rs_9", "summary": [], "encrypted_content": "gAAA"}
    )
    assert isinstance(again, dict)
    return again


def test_a_captured_request_hashes_the_same_when_its_per_run_values_differ() -> None:
    first = captured()
    later_ws = "/home/ci/run-88/workspace"
    second = another_run(first, later_ws)
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
