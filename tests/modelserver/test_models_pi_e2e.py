"""End-to-end: the real Pi CLI talks to the scripted model server over both wire formats."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_skill_eval.modelserver.placeholders import canonical_json, normalise_request
from pytest_skill_eval.modelserver.scriptparse import parse_script

# The `run_pi` fixture (tests/modelserver/conftest.py) returns a PiRun; conftest is not importable.
RunPi = Callable[..., Any]

pytestmark = pytest.mark.pi

COST = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}
APIS = [
    pytest.param("openai-completions", "skill-eval", "scripted", id="openai-completions"),
    # A declared built-in provider must still be routed to the loopback server.
    pytest.param("anthropic-messages", "anthropic", "claude-sonnet-4-5", id="anthropic-messages"),
]


def expected_cost(usage: dict[str, int]) -> dict[str, float]:
    """Pi's calculateCost: price per million tokens times tokens, per kind, plus the total."""
    parts = {
        "input": COST["input"] / 1e6 * usage["input"],
        "output": COST["output"] / 1e6 * usage["output"],
        "cacheRead": COST["cacheRead"] / 1e6 * usage["cache_read"],
        "cacheWrite": COST["cacheWrite"] / 1e6 * usage["cache_write"],
    }
    return {**parts, "total": sum(parts.values())}


def text_of(message: dict[str, Any], kind: str = "text") -> str:
    return "".join(part.get(kind, "") for part in message["content"] if part["type"] == kind)


@pytest.mark.parametrize(("api", "provider", "model_id"), APIS)
def test_scripted_text_reply_reaches_message_end(
    run_pi: RunPi, api: str, provider: str, model_id: str
) -> None:
    usage = {"input": 1200, "output": 30, "cache_read": 400, "cache_write": 50}
    script = parse_script(
        {
            "version": 1,
            "interactions": [
                {
                    "response": {
                        "thinking": "Planning.",
                        "text": "Hello from the script!",
                        "usage": usage,
                    }
                }
            ],
        }
    )
    run = run_pi(script, "Say hello", api=api, provider=provider, model_id=model_id, cost=COST)
    assert run.returncode == 0, run.stderr
    [message] = run.assistant_messages()
    assert message["stopReason"] == "stop"
    assert text_of(message) == "Hello from the script!"
    assert text_of(message, "thinking") == "Planning."
    assert (message["api"], message["provider"], message["model"]) == (api, provider, model_id)
    got = message["usage"]
    assert (got["input"], got["output"], got["cacheRead"], got["cacheWrite"]) == (1200, 30, 400, 50)
    assert got["totalTokens"] == 1680
    assert got["cost"] == pytest.approx(expected_cost(usage))
    assert run.of_type("agent_end")[-1]["messages"][-1]["stopReason"] == "stop"
    [request] = run.route.requests
    assert request.api == api
    assert request.body["model"] == model_id
    assert run.route.failures == []


@pytest.mark.parametrize(("api", "provider", "model_id"), APIS)
def test_scripted_read_tool_call_is_executed(
    run_pi: RunPi, api: str, provider: str, model_id: str
) -> None:
    script = parse_script(
        {
            "version": 1,
            "interactions": [
                {
                    "response": {
                        "text": "Reading it.",
                        "tool_calls": [
                            {"name": "read", "arguments": {"path": "{{workspace}}/a.txt"}}
                        ],
                    }
                },
                {"response": {"text": "The file says alpha."}},
            ],
        }
    )
    run = run_pi(
        script,
        "What is in a.txt?",
        api=api,
        provider=provider,
        model_id=model_id,
        files={"a.txt": "alpha-content-42\n"},
    )
    assert run.returncode == 0, run.stderr
    first, second = run.assistant_messages()
    assert first["stopReason"] == "toolUse"
    [call] = [part for part in first["content"] if part["type"] == "toolCall"]
    assert call["name"] == "read"
    assert call["arguments"] == {"path": f"{run.workspace}/a.txt"}
    [end] = run.of_type("tool_execution_end")
    assert end["isError"] is False
    assert end["toolCallId"] == call["id"]
    assert end["result"]["content"] == [{"type": "text", "text": "alpha-content-42\n"}]
    assert second["stopReason"] == "stop"
    assert text_of(second) == "The file says alpha."

    assert [r.api for r in run.route.requests] == [api, api]
    followup = run.route.requests[1].body["messages"]
    if api == "openai-completions":
        [tool] = [m for m in followup if m["role"] == "tool"]
        assert tool == {"role": "tool", "content": "alpha-content-42\n", "tool_call_id": call["id"]}
    else:
        results = [
            part
            for m in followup
            if m["role"] == "user" and isinstance(m["content"], list)
            for part in m["content"]
            if part["type"] == "tool_result"
        ]
        [result] = results
        assert result["tool_use_id"] == call["id"]
        assert result["content"] == "alpha-content-42\n"
        assert result["is_error"] is False
    # Normalising puts the placeholder back where Pi echoed the absolute path.
    normal = canonical_json(normalise_request(run.route.requests[1].body, run.route.placeholders))
    assert "{{workspace}}/a.txt" in normal
    assert str(run.workspace) not in normal
    assert run.route.failures == []


def test_error_interaction_is_not_retried(run_pi: RunPi) -> None:
    script = parse_script(
        {
            "version": 1,
            "interactions": [
                {"response": {"error": {"status": 503, "message": "scripted outage"}}},
                {"response": {"text": "a retry would get this"}},
            ],
        }
    )
    run = run_pi(
        script, "Say hello", api="openai-completions", provider="skill-eval", model_id="scripted"
    )
    assert run.returncode == 0, run.stderr
    final = run.of_type("agent_end")[-1]["messages"][-1]
    assert final["stopReason"] == "error"
    assert "503" in final["errorMessage"]
    assert "scripted outage" in final["errorMessage"]
    # settings.json turns off SDK and agent retries: exactly one request, one interaction used.
    assert [r.status for r in run.route.requests] == [503]
    assert run.route.consumed == 1
    assert run.route.failures == []
