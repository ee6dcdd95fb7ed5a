"""Record a body group from a provider on loopback, then replay it with the provider gone."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall
from pytest_skill_eval.modelserver.wire import OPENAI, render_stream
from tests.support.files import read_json
from tests.support.http import FakeUpstream, UpstreamRequest
from tests.support.roots import body_group, make_root
from tests.support.runs import results, skill_eval_args

pytestmark = pytest.mark.pi

CANARY = "sk-fakeco-canary-5d1e"
SKILL_LOCATION = re.compile(r'<skill name="answer-writer" location="([^"]+)"')


def _sse(response: ScriptedResponse, index: int) -> tuple[int, str, list[bytes]]:
    reply = render_stream(OPENAI, response, model="m1", request_index=index)
    return 200, "text/event-stream", list(reply.chunks)


def _write(text: str, index: int) -> Callable[[UpstreamRequest], tuple[int, str, list[bytes]]]:
    call = ToolCall("write", {"path": "answer.txt", "content": text})
    return lambda request: _sse(ScriptedResponse(tool_calls=(call,), stop="tool_use"), index)


def _read_skill(request: UpstreamRequest) -> tuple[int, str, list[bytes]]:
    # Like a real model: it reads the skill at the absolute path it was shown.
    match = SKILL_LOCATION.search(json.dumps(request.body["messages"]).replace('\\"', '"'))
    assert match, "the delivered skill names its location"
    call = ToolCall("read", {"path": match.group(1)})
    return _sse(ScriptedResponse(tool_calls=(call,), stop="tool_use"), 0)


def _done(index: int) -> Callable[[UpstreamRequest], tuple[int, str, list[bytes]]]:
    return lambda request: _sse(ScriptedResponse(text="done"), index)


def _facts(result_dir: Path) -> dict[str, Any]:
    group = result_dir / "groups" / "rec"
    grade = read_json(group / "deterministic-grade.json")
    runs = {v: read_json(group / v / "run.json") for v in ("baseline", "candidate")}
    return {
        "checks": [(c["id"], c["state"]) for c in grade["checks"]],
        "comparisons": [(c["id"], c["transition"]) for c in grade["comparisons"]],
        "tools": {
            v: [(a["toolName"], a["isError"]) for t in r["turns"] for a in t["toolActivity"]]
            for v, r in runs.items()
        },
        "responses": {v: r["response"] for v, r in runs.items()},
        "changes": {v: r["effects"]["changes"] for v, r in runs.items()},
    }


def test_record_then_replay_gives_identical_facts(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_root(tmp_path / "root", [body_group("rec", model={"model": "fakeco/m1"})], {})
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    upstream = FakeUpstream([_write("no", 0), _done(1), _read_skill, _write("yes", 1), _done(2)])
    models = {
        "providers": {
            "fakeco": {
                "baseUrl": f"{upstream.base_url}/v1",
                "api": OPENAI,
                "apiKey": "FAKECO_KEY",
                "models": [
                    {
                        "id": "m1",
                        "cost": {"input": 3, "output": 15, "cacheRead": 0, "cacheWrite": 0},
                    }
                ],
            }
        }
    }
    (tmp_path / "models.json").write_text(json.dumps(models))
    monkeypatch.setenv("FAKECO_KEY", CANARY)
    common = [
        *skill_eval_args(root, cassettes=False),
        *("--skill-eval-cassettes", str(cassettes)),
        *("-o", f"skill_eval_pi_models={tmp_path / 'models.json'}"),
    ]
    try:
        recorded = pytester.runpytest_subprocess(*common, "--skill-eval-record", "once")
    finally:
        upstream.stop()
    assert recorded.ret == 0, recorded.stdout.str()
    assert len(upstream.requests) == 5
    assert all(r.headers.get("authorization") == f"Bearer {CANARY}" for r in upstream.requests)
    first = results(root)[-1]
    cassette = (cassettes / "rec" / "candidate.yaml").read_text()
    assert "{{skill:0}}/SKILL.md" in cassette, "the recorded read points at the placeholder"
    record_run = read_json(first / "groups" / "rec" / "candidate" / "run.json")
    assert record_run["provider"]["mode"] == "record"
    assert record_run["provider"]["sha256"]

    replayed = pytester.runpytest_subprocess(*common)  # upstream stopped: replay only
    assert replayed.ret == 0, replayed.stdout.str()
    second = results(root)[-1]
    assert second != first
    assert _facts(first) == _facts(second)
    assert _facts(second)["comparisons"] == [("says-yes", "fail-to-pass")]
    replay_run = read_json(second / "groups" / "rec" / "candidate" / "run.json")
    assert replay_run["provider"]["mode"] == "replay"
    read_path = replay_run["turns"][0]["toolActivity"][0]["args"]["path"]
    assert read_path.startswith(str(second)), "the replayed read reached the new snapshot"
    assert replay_run["turns"][0]["targetRead"] is True
    for base in (root / ".skill-eval", cassettes):
        for path in base.rglob("*"):
            if path.is_file():
                assert CANARY.encode() not in path.read_bytes(), path
