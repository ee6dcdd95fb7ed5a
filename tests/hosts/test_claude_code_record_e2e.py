"""Record a Claude Code run from a provider on loopback, then replay it with `match: body`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall
from pytest_skill_eval.modelserver.wire import ANTHROPIC, render_stream
from tests.support.files import read_json, write
from tests.support.http import FakeUpstream, UpstreamRequest
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import results, skill_eval_args

pytestmark = [pytest.mark.pi, pytest.mark.claude]

CANARY = "sk-ant-upstream-canary-77c1"
WORKING_DIRECTORY = re.compile(r"Primary working directory: ([^\s\\]+)")
Answer = Callable[[UpstreamRequest], tuple[int, str, list[bytes]]]


def _sse(response: ScriptedResponse, index: int) -> tuple[int, str, list[bytes]]:
    reply = render_stream(ANTHROPIC, response, model="claude-m1", request_index=index)
    return 200, "text/event-stream", list(reply.chunks)


def _read_notes(request: UpstreamRequest) -> tuple[int, str, list[bytes]]:
    # Like a real model: it reads at the absolute path of the working directory it was shown.
    match = WORKING_DIRECTORY.search(json.dumps(request.body["messages"]))
    assert match, "Claude Code names its working directory"
    call = ToolCall("Read", {"file_path": f"{match.group(1)}/notes.txt"})
    return _sse(ScriptedResponse(tool_calls=(call,), stop="tool_use"), 0)


def _text(text: str, index: int) -> Answer:
    return lambda request: _sse(ScriptedResponse(text=text), index)


def test_a_recorded_claude_code_run_replays_with_match_body(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="rec",
        type="body",
        turns=["Tidy the notes.", "Anything else?"],
        tools=["read", "write"],
        fixture="fixture",
        runtime=runtime(host="claude-code"),
        candidate=variant([declared], 0),
    )
    suite = build(root, [group])
    definition = root / "groups" / "rec.json"
    document = json.loads(definition.read_text(encoding="utf-8"))
    document["model"] = {"model": "anthropic/claude-m1"}
    definition.write_text(json.dumps(document), encoding="utf-8")
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    upstream = FakeUpstream([_read_notes, _text("Tidied.", 1), _text("Nothing else.", 2)])
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    common = [
        *skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite, cassettes=False),
        *("--skill-eval-cassettes", str(cassettes)),
        *("-o", f"skill_eval_upstream_url={upstream.base_url}"),
    ]
    try:
        recorded = pytester.runpytest_subprocess(*common, "--skill-eval-record", "once")
    finally:
        upstream.stop()
    assert recorded.ret == 0, recorded.stdout.str()
    assert len(upstream.requests) == 3
    assert all(r.headers.get("x-api-key") == CANARY for r in upstream.requests)
    # The cassette's name says the host: a recording holds one host's requests.
    cassette = cassettes / "rec" / "candidate@claude-code.yaml"
    assert sorted(p.name for p in (cassettes / "rec").iterdir()) == [cassette.name]
    text = cassette.read_text(encoding="utf-8")
    assert "{{workspace}}/notes.txt" in text, "the recorded read points at the placeholder"
    first = results(root)[-1]
    first_run = read_json(first / "groups" / "rec@claude-code" / "candidate" / "run.json")
    assert first_run["state"] == "complete", first_run["error"]

    # Replay, upstream gone, every request matched by its normalised body.
    cassette.write_text(text.replace("match: order", "match: body"), encoding="utf-8")
    assert "match: body" in cassette.read_text(encoding="utf-8")
    replayed = pytester.runpytest_subprocess(*common)
    assert replayed.ret == 0, replayed.stdout.str()
    second = results(root)[-1]
    assert second != first
    run = read_json(second / "groups" / "rec@claude-code" / "candidate" / "run.json")
    assert run["state"] == "complete", run["error"]
    assert run["provider"]["mode"] == "replay"
    assert [t["response"] for t in run["turns"]] == ["Tidied.", "Nothing else."]
    (read,) = run["turns"][0]["toolActivity"]
    assert read["isError"] is False
    assert read["args"]["path"] == f"{run['workspace']}/notes.txt"  # the new workspace
    for base in (root / ".skill-eval", cassettes):
        for path in base.rglob("*"):
            if path.is_file():
                assert CANARY.encode() not in path.read_bytes(), path
