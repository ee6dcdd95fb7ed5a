"""A secret the subject echoes everywhere is in no byte of the result, terminal or JUnit."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import read_json
from tests.support.roots import body_group, make_root
from tests.support.runs import results, run

pytestmark = pytest.mark.pi

MARKER = "[redacted:CANARY]"


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _expect(ident: str, kind: str, **fields: Any) -> list[dict[str, Any]]:
    return [
        {"id": f"{v}-{ident}", "kind": kind, "variant": v, "comparison": ident, **fields}
        for v in ("baseline", "candidate")
    ]


def test_an_inherited_secret_echoed_everywhere_is_redacted_everywhere(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A quote and a backslash, so the JSON-escaped form differs from the raw one.
    tail = os.urandom(8).hex()
    canary = 'sk-"canary"\\' + tail
    monkeypatch.setenv("CANARY", canary)
    forms = {
        "raw": canary.encode(),
        "json": json.dumps(canary)[1:-1].encode(),
        "base64": base64.b64encode(canary.encode()),
    }
    runtime = {
        "host": "pi",
        # With a persistent session, Pi writes its own session file into the evidence too.
        "session": True,
        "extensions": [],
        "environment": {"literal": {"REGION": "eu"}, "inherit": ["CANARY"]},
    }
    commands = [
        {"id": "printenv", "argv": ["printenv", "CANARY"]},
        {"id": "env", "argv": ["env"]},
        {"id": "stderr", "argv": ["sh", "-c", 'printf "%s\\n" "$CANARY" >&2; exit 3']},
    ]
    expectations = [
        # Grading sees the redacted workspace: the marker, never the value.
        *_expect("leak-is-redacted", "file-text", path="leak.txt", expect="contains", value=MARKER),
        # The context observer saw the tool results; its evidence keeps the marker.
        *_expect(
            "context-is-redacted",
            "context-text",
            surface="provider-context",
            expect="contains",
            value=MARKER,
        ),
        # Fails, so the terminal and JUnit report quote the (redacted) text.
        *_expect("reply-says-nothing", "response-text", expect="equals", value="nothing"),
        *_expect("answer-is-yes", "file-text", path="answer.txt", expect="equals", value="yes"),
    ]
    group = body_group(
        "secret",
        tools=["read", "write", "edit", "run_command"],
        commands=commands,
        runtime=runtime,
        expectations=expectations,
    )
    script: list[dict[str, Any]] = [
        {
            "response": {
                "tool_calls": [
                    _call("write", path="leak.txt", content=f"the key is {canary}\n"),
                    _call("write", path="answer.txt", content="yes"),
                ]
            }
        },
        {"response": {"tool_calls": [_call("run_command", command=c["id"]) for c in commands]}},
        {
            "response": {
                "tool_calls": [
                    _call("edit", path="answer.txt", edits=[{"oldText": "yes", "newText": canary}]),
                    _call("read", path=f"missing-{canary}.txt"),  # a tool error naming it
                ]
            }
        },
        {"response": {"text": f"The secret is {canary}. Again: {canary}"}},
    ]
    root = make_root(
        tmp_path / "root", [group], {"secret/baseline": script, "secret/candidate": script}
    )
    junit = tmp_path / "junit.xml"
    result = run(pytester, root, f"--junitxml={junit}", "--skill-eval-fail-on", "any", "-rA", "-v")
    terminal = (result.stdout.str() + result.stderr.str()).encode()
    assert result.ret == 1, terminal.decode()
    result_dir = results(root)[-1]
    variant = result_dir / "groups" / "secret" / "candidate"
    record = read_json(variant / "run.json")
    assert record["state"] == "complete", record["error"]

    # The subject did receive the value (its tool results were redacted, not empty).
    outputs = [a for t in record["turns"] for a in t["toolActivity"]]
    assert any(MARKER in json.dumps(a) for a in outputs)

    # Nothing under the result, on the terminal or in the JUnit XML holds any form of it.
    written = {
        path: path.read_bytes()
        for path in sorted(result_dir.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }
    written[Path("<terminal>")] = terminal
    written[Path("<junit>")] = junit.read_bytes()
    # The reply streams in fragments: no 8 characters of the random part survive in any piece.
    forms |= {f"piece {i}": tail[i : i + 8].encode() for i in range(len(tail) - 7)}
    for path, data in written.items():
        for name, form in forms.items():
            assert form not in data, f"{name} form of the secret in {path}"
    for name in ("events.jsonl", "transcript.json", "model-requests.jsonl", "final.md"):
        assert MARKER.encode() in (variant / name).read_bytes(), name
    assert list((variant / "session").rglob("*.jsonl")), "Pi kept its session in the evidence"
    assert (variant / "workspace" / "leak.txt").read_text() == f"the key is {MARKER}\n"
    assert (variant / "workspace" / "answer.txt").read_text() == MARKER
    assert MARKER.encode() in terminal
    assert MARKER.encode() in junit.read_bytes()

    # run.json says what was redacted where, by name and count, never the value.
    counts = record["redactions"]["CANARY"]
    names = ("events.jsonl", "transcript.json", "model-requests.jsonl", "final.md")
    for name in (*names, "context-observations.jsonl"):
        assert counts[name] >= 1, counts
    assert counts["final.md"] == 2
    assert counts["workspace/leak.txt"] == 1
    assert counts["workspace/answer.txt"] == 1
    assert set(record["redactions"]) == {"CANARY"}

    # Grading ran on the redacted evidence.
    grade = read_json(result_dir / "groups" / "secret" / "deterministic-grade.json")
    states = {c["id"]: c["state"] for c in grade["checks"]}
    assert states["candidate-leak-is-redacted"] == "pass", states
    assert states["candidate-context-is-redacted"] == "pass", states
    assert states["candidate-answer-is-yes"] == "fail", states
