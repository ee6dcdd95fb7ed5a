"""Record an opencode run from a chat-completions provider on loopback, then replay it by body."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import read_json, write
from tests.support.http import FakeUpstream
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import results, skill_eval_args

pytestmark = pytest.mark.pi

CANARY = "sk-proj-upstream-canary-0c17"


def _chat_sse(*, text: str | None = None, call: tuple[str, str] | None = None) -> bytes:
    """A chat-completions stream: one text, or one tool call (name, JSON arguments)."""
    head: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk"}
    head |= {"created": 1767312000, "model": "gpt-4o-2024-08-06"}
    delta: dict[str, Any] = {"role": "assistant", "content": text}
    if call is not None:
        function = {"name": call[0], "arguments": call[1]}
        tool_call = {"index": 0, "id": "call_up_1", "type": "function", "function": function}
        delta["tool_calls"] = [tool_call]
    finish = "tool_calls" if call is not None else "stop"
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    frames = [
        head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        head | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        head | {"choices": [], "usage": usage},
    ]
    return b"".join(f"data: {json.dumps(f)}\n\n".encode() for f in frames) + b"data: [DONE]\n\n"


def _sse(body: bytes) -> tuple[int, str, list[bytes]]:
    return 200, "text/event-stream", [body]


def test_a_recorded_opencode_run_replays_with_match_body(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    group = Group(
        id="rec",
        type="body",
        turns=["Read the notes.", "Anything else?"],
        tools=["read"],
        fixture="fixture",
        runtime=runtime(host="opencode"),
        candidate=variant([skill(root, "note-taker")], 0),
    )
    suite = build(root, [group])
    definition = root / "groups" / "rec.json"
    document = json.loads(definition.read_text(encoding="utf-8"))
    document["model"] = {"model": "openai/gpt-4o"}
    definition.write_text(json.dumps(document), encoding="utf-8")
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    upstream = FakeUpstream(
        [
            _sse(_chat_sse(call=("read", json.dumps({"filePath": "notes.txt"})))),
            _sse(_chat_sse(text="Read.")),
            _sse(_chat_sse(text="Nothing else.")),
        ]
    )
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    common = [
        *skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite, cassettes=False),
        *("--skill-eval-cassettes", str(cassettes)),
        *("-o", f"skill_eval_upstream_url={upstream.base_url}/v1"),
    ]
    try:
        recorded = pytester.runpytest_subprocess(*common, "--skill-eval-record", "once")
    finally:
        upstream.stop()
    assert recorded.ret == 0, recorded.stdout.str()
    # Three answers, three requests: no title request went upstream either.
    assert len(upstream.requests) == 3
    assert all(r.path == "/v1/chat/completions" for r in upstream.requests)
    assert all(r.body["model"] == "gpt-4o" for r in upstream.requests)
    assert all(r.headers.get("authorization") == f"Bearer {CANARY}" for r in upstream.requests)
    cassette = cassettes / "rec" / "candidate@opencode.yaml"
    assert sorted(p.name for p in (cassettes / "rec").iterdir()) == [cassette.name]
    text = cassette.read_text(encoding="utf-8")
    assert "api: openai-completions" in text
    first = results(root)[-1]
    first_run = read_json(first / "groups" / "rec@opencode" / "candidate" / "run.json")
    assert first_run["state"] == "complete", first_run["error"]
    assert first_run["provider"]["mode"] == "record"

    # Replay, upstream gone, every request matched by its normalised body.
    cassette.write_text(text.replace("match: order", "match: body"), encoding="utf-8")
    replayed = pytester.runpytest_subprocess(*common)
    assert replayed.ret == 0, replayed.stdout.str()
    second = results(root)[-1]
    assert second != first
    run = read_json(second / "groups" / "rec@opencode" / "candidate" / "run.json")
    assert run["state"] == "complete", run["error"]
    assert run["provider"]["mode"] == "replay"
    assert [t["response"] for t in run["turns"]] == ["Read.", "Nothing else."]
    assert run["workspace"] != first_run["workspace"]
    for base in (root / ".skill-eval", cassettes):
        for path in base.rglob("*"):
            if path.is_file():
                assert CANARY.encode() not in path.read_bytes(), path
