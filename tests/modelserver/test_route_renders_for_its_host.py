"""A route writes a script's neutral tool calls as the host it was opened for, whatever tools a
request happens to offer: the model server never guesses a host from tool names."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_skill_eval.hosts.dialect import renderer
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.modelserver.test_models_server_http import BODY, openai_chunks, script
from tests.support.http import openai_url, post_reply

EDIT = {"name": "edit", "arguments": {"path": "a.md", "oldText": "x", "newText": "y"}}


def _offering(*tools: str) -> dict[str, Any]:
    return {**BODY, "tools": [{"type": "function", "function": {"name": t}} for t in tools]}


def _calls(server: ScriptedModelServer, token: str, body: dict[str, Any]) -> list[Any]:
    calls: dict[int, dict[str, Any]] = {}
    for chunk in openai_chunks(post_reply(openai_url(server, token), body)):
        for part in chunk["choices"][0]["delta"].get("tool_calls", []) if chunk["choices"] else []:
            call = calls.setdefault(part["index"], {"arguments": ""})
            call["name"] = part["function"].get("name") or call.get("name")
            call["arguments"] += part["function"]["arguments"]
    return [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())]


def test_a_route_for_opencode_answers_in_its_dialect_when_the_request_offers_only_pis_names(
    model_server: ScriptedModelServer,
) -> None:
    # opencode's read/write/edit carry Pi's names: such a request alone does not say opencode.
    route = model_server.open_route(script({"tool_calls": [EDIT]}), render=renderer("opencode"))
    calls = _calls(model_server, route.token, _offering("read", "write", "edit"))
    assert calls == [("edit", {"filePath": "a.md", "oldString": "x", "newString": "y"})]


def test_a_route_for_no_host_answers_as_the_script_wrote_it(
    model_server: ScriptedModelServer,
) -> None:
    route = model_server.open_route(script({"tool_calls": [EDIT]}))
    calls = _calls(model_server, route.token, _offering("Read", "Write", "Edit", "Skill"))
    assert calls == [("edit", {"path": "a.md", "oldText": "x", "newText": "y"})]


def test_a_renderer_for_an_unknown_host_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown host 'cursor'"):
        renderer("cursor")
