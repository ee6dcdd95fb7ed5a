"""observer.mjs in the real Pi: both surfaces, request numbering, evaluator turn numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.pi.extensions import GUARD, OBSERVER
from tests.support.shared import shared_pi_run

pytestmark = pytest.mark.pi

# An astral character counts twice in JS `.length`, which `characters` must follow.
FIRST = "First \U0001d11e prompt"
SECOND = "Second prompt"


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def read_records(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def without_timestamps(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in record.items() if k != "timestamp"} for record in records]


def _counted_run(pi_launcher: Any, base: Path) -> Any:
    """Two prompts in one json run, no turn file: a tool round trip, then a plain answer."""
    sandbox = pi_launcher.sandbox(base)
    (sandbox.workspace / "a.txt").write_text("a content\n", encoding="utf-8")
    script = {
        "version": 1,
        "interactions": [
            {
                "response": {
                    "text": "Reading.",
                    "tool_calls": [{"id": "r1", "name": "read", "arguments": {"path": "a.txt"}}],
                }
            },
            {"response": {"text": "one"}},
            {"response": {"text": "two"}},
        ],
    }
    env = {"SKILL_EVAL_CONTEXT_OBSERVATION_PATH": str(sandbox.root / "observations.jsonl")}
    run = pi_launcher.run_json(
        sandbox,
        script,
        [FIRST, SECOND],
        extensions=[GUARD, OBSERVER],
        tools=["read"],
        env=env,
    ).passed()
    assert len(run.requests) == 3
    return run


counted_run = shared_pi_run("observer-counted", _counted_run)


def test_records_follow_prompts_and_requests(counted_run: Any) -> None:
    records = read_records(counted_run.sandbox.root / "observations.jsonl")
    summary = [
        (r["surface"], r["turn"], r.get("providerRequest"), r.get("requestInTurn")) for r in records
    ]
    assert summary == [
        ("system-prompt", 1, None, None),
        ("provider-context", 1, 1, 1),
        ("provider-context", 1, 2, 2),
        ("system-prompt", 2, None, None),
        ("provider-context", 2, 3, 1),
    ]
    assert all(r["kind"] == "context" for r in records)
    assert all(isinstance(r["timestamp"], str) and r["timestamp"].endswith("Z") for r in records)


def test_system_prompt_record_is_the_effective_prompt(counted_run: Any) -> None:
    records = read_records(counted_run.sandbox.root / "observations.jsonl")
    system_records = [r for r in records if r["surface"] == "system-prompt"]
    sent = counted_run.system_prompts()
    assert [r["prompt"] for r in system_records] == [FIRST, SECOND]
    # The observer sees the guard's isolated prompt, exactly as the model received it.
    assert [r["text"] for r in system_records] == [sent[0], sent[2]]
    assert sent[0].startswith("You are an expert coding assistant operating inside pi for a skill")
    for record in system_records:
        assert set(record) == {
            "timestamp",
            "turn",
            "kind",
            "surface",
            "prompt",
            "characters",
            "text",
        }
        assert record["characters"] == utf16_length(record["text"])


def test_provider_context_projects_messages(counted_run: Any) -> None:
    records = read_records(counted_run.sandbox.root / "observations.jsonl")
    contexts = [r for r in records if r["surface"] == "provider-context"]
    user_first = {"role": "user", "toolName": None, "text": FIRST}
    assistant = {"role": "assistant", "toolName": None, "text": "Reading."}
    tool_result = {"role": "toolResult", "toolName": "read", "text": "a content\n"}
    assert [c["messages"] for c in contexts] == [
        [user_first],
        [user_first, assistant, tool_result],
        [
            user_first,
            assistant,
            tool_result,
            {"role": "assistant", "toolName": None, "text": "one"},
            {"role": "user", "toolName": None, "text": SECOND},
        ],
    ]
    assert contexts[1]["text"] == f"{FIRST}\nReading.\na content\n"
    for record in contexts:
        assert record["characters"] == utf16_length(record["text"])
    assert contexts[0]["characters"] == len(FIRST) + 1


def test_projection_covers_every_message_sent(counted_run: Any) -> None:
    records = read_records(counted_run.sandbox.root / "observations.jsonl")
    contexts = [r for r in records if r["surface"] == "provider-context"]
    for record, request in zip(contexts, counted_run.requests, strict=True):
        # Every projected message plus the system message reached the provider.
        assert len(request.body["messages"]) == len(record["messages"]) + 1


def test_turn_numbers_come_from_the_turn_file(pi_launcher: Any, tmp_path: Path) -> None:
    sandbox = pi_launcher.sandbox(tmp_path)
    turn_file = sandbox.root / "turn"
    observations = sandbox.root / "observations.jsonl"
    evaluator_turns = {1: 5, 2: 9}
    script = {
        "version": 1,
        "interactions": [{"response": {"text": "one"}}, {"response": {"text": "two"}}],
    }
    pi_launcher.run_rpc(
        sandbox,
        script,
        [FIRST, SECOND],
        extensions=[GUARD, OBSERVER],
        tools=["read"],
        env={
            "SKILL_EVAL_CONTEXT_OBSERVATION_PATH": str(observations),
            "SKILL_EVAL_TURN_FILE": str(turn_file),
        },
        before_prompt=lambda turn: turn_file.write_text(f"{evaluator_turns[turn]}\n"),
    ).passed()
    records = without_timestamps(read_records(observations))
    summary = [
        (r["surface"], r["turn"], r.get("providerRequest"), r.get("requestInTurn")) for r in records
    ]
    assert summary == [
        ("system-prompt", 5, None, None),
        ("provider-context", 5, 1, 1),
        ("system-prompt", 9, None, None),
        ("provider-context", 9, 2, 1),
    ]
