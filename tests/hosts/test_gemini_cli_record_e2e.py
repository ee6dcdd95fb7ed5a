"""Record a Gemini CLI run from a Gemini API provider on loopback, then replay it by body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skill_eval.modelserver.gemini import GEMINI
from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall
from pytest_skill_eval.modelserver.wire import render_stream
from tests.support.files import read_json, write
from tests.support.http import FakeUpstream
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import results, skill_eval_args

pytestmark = [pytest.mark.pi, pytest.mark.gemini]

CANARY = "AIza-upstream-canary-77c1"


def _sse(response: ScriptedResponse) -> tuple[int, str, list[bytes]]:
    reply = render_stream(GEMINI, response, model="gemini-2.5-flash", request_index=0)
    return 200, "text/event-stream", list(reply.chunks)


def test_a_recorded_gemini_cli_run_replays_with_match_body(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="rec",
        type="body",
        turns=["Read the notes.", "Anything else?"],
        tools=["read"],
        fixture="fixture",
        runtime=runtime(host="gemini-cli"),
        candidate=variant([declared], 0),
    )
    suite = build(root, [group])
    definition = root / "groups" / "rec.json"
    document = json.loads(definition.read_text(encoding="utf-8"))
    document["model"] = {"model": "google/gemini-2.5-flash"}
    definition.write_text(json.dumps(document), encoding="utf-8")
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    read = ToolCall("read_file", {"file_path": "notes.txt"})
    upstream = FakeUpstream(
        [
            _sse(ScriptedResponse(tool_calls=(read,), stop="tool_use")),
            _sse(ScriptedResponse(text="Read.")),
            _sse(ScriptedResponse(text="Nothing else.")),
        ]
    )
    monkeypatch.setenv("GEMINI_API_KEY", CANARY)
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
    stream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"  # (`?alt=sse` follows)
    assert all(r.path == stream for r in upstream.requests)
    assert all(r.headers.get("x-goog-api-key") == CANARY for r in upstream.requests)
    cassette = cassettes / "rec" / "candidate@gemini-cli.yaml"
    assert sorted(p.name for p in (cassettes / "rec").iterdir()) == [cassette.name]
    text = cassette.read_text(encoding="utf-8")
    assert "api: gemini-generate-content" in text
    first = results(root)[-1]
    first_run = read_json(first / "groups" / "rec@gemini-cli" / "candidate" / "run.json")
    assert first_run["state"] == "complete", first_run["error"]
    assert first_run["provider"]["mode"] == "record"

    # Replay, upstream gone, every request matched by its normalised body (the date, the
    # isolated home, the workspace and Gemini CLI's call ids differ from run to run).
    cassette.write_text(text.replace("match: order", "match: body"), encoding="utf-8")
    assert "match: body" in cassette.read_text(encoding="utf-8")
    replayed = pytester.runpytest_subprocess(*common)
    assert replayed.ret == 0, replayed.stdout.str()
    second = results(root)[-1]
    assert second != first
    run = read_json(second / "groups" / "rec@gemini-cli" / "candidate" / "run.json")
    assert run["state"] == "complete", run["error"]
    assert run["provider"]["mode"] == "replay"
    assert [t["response"] for t in run["turns"]] == ["Read.", "Nothing else."]
    assert run["workspace"] != first_run["workspace"]
    for base in (root / ".skill-eval", cassettes):
        for path in base.rglob("*"):
            if path.is_file():
                assert CANARY.encode() not in path.read_bytes(), path
