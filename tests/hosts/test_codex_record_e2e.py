"""Record a Codex run from a Responses API provider on loopback, then replay it by body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.files import read_json, write
from tests.support.http import FakeUpstream, responses_sse
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import results, skill_eval_args

pytestmark = [pytest.mark.pi, pytest.mark.codex]

CANARY = "sk-proj-upstream-canary-41d9"


def _sse(body: bytes) -> tuple[int, str, list[bytes]]:
    return 200, "text/event-stream", [body]


def test_a_recorded_codex_run_replays_with_match_body(
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
        runtime=runtime(host="codex"),
        candidate=variant([declared], 0),
    )
    suite = build(root, [group])
    definition = root / "groups" / "rec.json"
    document = json.loads(definition.read_text(encoding="utf-8"))
    document["model"] = {"model": "openai/gpt-5.5"}
    definition.write_text(json.dumps(document), encoding="utf-8")
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    read = ("exec_command", json.dumps({"cmd": "cat notes.txt"}), "call_up_1")
    upstream = FakeUpstream(
        [
            _sse(responses_sse(call=read)),
            _sse(responses_sse(text="Read.")),
            _sse(responses_sse(text="Nothing else.")),
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
    assert len(upstream.requests) == 3
    assert all(r.path == "/v1/responses" for r in upstream.requests)
    assert all(r.headers.get("authorization") == f"Bearer {CANARY}" for r in upstream.requests)
    # The cassette's name says the host: a recording holds one host's requests.
    cassette = cassettes / "rec" / "candidate@codex.yaml"
    assert sorted(p.name for p in (cassettes / "rec").iterdir()) == [cassette.name]
    text = cassette.read_text(encoding="utf-8")
    assert "api: openai-responses" in text
    first = results(root)[-1]
    first_run = read_json(first / "groups" / "rec@codex" / "candidate" / "run.json")
    assert first_run["state"] == "complete", first_run["error"]
    assert first_run["provider"]["mode"] == "record"

    # Replay, upstream gone, every request matched by its normalised body.
    cassette.write_text(text.replace("match: order", "match: body"), encoding="utf-8")
    assert "match: body" in cassette.read_text(encoding="utf-8")
    replayed = pytester.runpytest_subprocess(*common)
    assert replayed.ret == 0, replayed.stdout.str()
    second = results(root)[-1]
    assert second != first
    run = read_json(second / "groups" / "rec@codex" / "candidate" / "run.json")
    assert run["state"] == "complete", run["error"]
    assert run["provider"]["mode"] == "replay"
    assert [t["response"] for t in run["turns"]] == ["Read.", "Nothing else."]
    assert run["workspace"] != first_run["workspace"]
    for base in (root / ".skill-eval", cassettes):
        for path in base.rglob("*"):
            if path.is_file():
                assert CANARY.encode() not in path.read_bytes(), path
