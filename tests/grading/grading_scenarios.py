"""Recorded scenarios shared by the grading tests: one body run and two description runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.grading.grading_evidence import Built, Call, Turn, build_variant

BODY_PROMPTS = ["Inspect the task and prepare the work.", "Complete it and write result.json."]
DESCRIPTION_PROMPTS = [
    "Help me inspect this ordinary change.",
    "Now prepare a deployment rollback.",
    "Thanks, summarise what you did.",
]
SKILL = {
    "SKILL.md": "---\nname: target-skill\ndescription: Deployment rollbacks.\n---\n"
    "Always write result.json with a status field.\n",
    "references/guide.md": "# Guide\nRoll back one service at a time.\n",
}
CONTEXT = {"contract.md": "Use tabs for indentation.\n"}
FIXTURE = {
    "notes.md": "draft\n",
    "old.txt": "remove me\n",
    "data/config.json": '{"mode": "fast"}\n',
}
RESULT_JSON = (
    '{"status": "complete", "count": 3, "ratio": 1.0, "flags": [true, false], '
    '"nested": {"a/b": 1, "m~n": 2, "": "blank"}, "empty": null, "list": ["x", "y"]}\n'
)
SYSTEM_PROMPT = (
    "You are a coding assistant working in an isolated workspace.\n"
    '<declared_context><file path="contract.md">Use tabs for indentation.\n</file>'
    "</declared_context>"
)
FINAL_RESPONSE = "Done: result.json is complete. ✅ 😀"


def body_turns(*, write_result: bool = True) -> list[Turn]:
    """Two turns: prepare (reads, plan.md), then complete (result.json, commands, a delete)."""
    first = Turn(
        prompt=BODY_PROMPTS[0],
        response="I read the guide and the notes, and wrote plan.md.",
        calls=[
            Call("read", {"path": "{skill:0}/references/guide.md"}),
            Call("read", {"path": "notes.md"}),
            Call("read", {"path": "missing.txt"}, outcome="error"),
            Call("write", {"path": "plan.md", "content": "1. write result.json\n"}),
        ],
    )
    second_calls = [
        Call("write", {"path": "broken.json", "content": "{not json"}),
        Call("run_command", {"id": "unit-tests"}),
        Call("run_command", {"id": "lint"}, outcome="error"),
        Call(
            "edit",
            {"path": "notes.md", "edits": [{"oldText": "draft", "newText": "é"}]},
            "incomplete",
        ),
    ]
    if write_result:
        second_calls.insert(0, Call("write", {"path": "result.json", "content": RESULT_JSON}))
    second = Turn(
        prompt=BODY_PROMPTS[1],
        response=FINAL_RESPONSE if write_result else "I could not finish.",
        calls=second_calls,
        deletes=["old.txt"],
        symlinks={"latest.json": "result.json"} if write_result else {},
    )
    return [first, second]


def body_observations() -> list[dict[str, Any]]:
    """Observer records for two turns: system prompt and provider requests."""
    stamp = "2026-11-30T21:11:52.000Z"

    def system(turn: int, prompt: str) -> dict[str, Any]:
        return {
            "timestamp": stamp,
            "turn": turn,
            "kind": "context",
            "surface": "system-prompt",
            "prompt": prompt,
            "characters": len(SYSTEM_PROMPT),
            "text": SYSTEM_PROMPT,
        }

    def provider(turn: int, request: int, in_turn: int, text: str) -> dict[str, Any]:
        return {
            "timestamp": stamp,
            "turn": turn,
            "kind": "context",
            "surface": "provider-context",
            "providerRequest": request,
            "requestInTurn": in_turn,
            "characters": len(text),
            "text": text,
            "messages": [{"role": "user", "toolName": None, "text": text}],
        }

    return [
        system(1, f"/skill:target-skill {BODY_PROMPTS[0]}"),
        provider(1, 1, 1, f"/skill:target-skill {BODY_PROMPTS[0]}"),
        provider(1, 2, 2, "Successfully wrote 21 bytes to plan.md"),
        system(2, BODY_PROMPTS[1]),
        provider(2, 3, 1, BODY_PROMPTS[1]),
    ]


def body_run(
    result_dir: Path,
    variant: str = "candidate",
    *,
    write_result: bool = True,
    observations: bool = True,
    snapshot_turns: bool = True,
    state: str = "complete",
) -> Built:
    """A two-turn body run with a fixture, one target skill and one context file."""
    return build_variant(
        result_dir,
        variant,
        body_turns(write_result=write_result),
        fixture=FIXTURE,
        skills=[SKILL],
        target=0,
        context=[CONTEXT],
        observations=body_observations() if observations else None,
        snapshot_turns=snapshot_turns,
        state=state,
    )


def description_run(
    result_dir: Path,
    variant: str = "candidate",
    *,
    read_on: int | None = 2,
    state: str = "complete",
) -> Built:
    """A three-turn description run whose target is read on `read_on` (None: never)."""
    turns = [Turn(prompt=p, response=f"Answer {n}.") for n, p in enumerate(DESCRIPTION_PROMPTS, 1)]
    if read_on is not None:
        turns[read_on - 1].calls.append(Call("read", {"path": "{skill:0}/SKILL.md"}))
    return build_variant(
        result_dir,
        variant,
        turns,
        group_type="description",
        skills=[SKILL],
        target=0,
        context=[CONTEXT],
        state=state,
    )


def targetless_description_run(result_dir: Path, variant: str = "baseline") -> Built:
    """A three-turn description baseline with no target skill at all."""
    turns = [Turn(prompt=p, response=f"Answer {n}.") for n, p in enumerate(DESCRIPTION_PROMPTS, 1)]
    return build_variant(result_dir, variant, turns, group_type="description")


def one_shot_description_run(result_dir: Path, variant: str = "candidate") -> Built:
    """A one-shot (`input.prompt`, JSON mode) description run that reads its target."""
    turn = Turn(
        prompt="Roll back the payments service.",
        response="I'll follow the rollback skill.",
        calls=[Call("read", {"path": "{skill:0}/SKILL.md"})],
    )
    return build_variant(
        result_dir,
        variant,
        [turn],
        group_type="description",
        one_shot=True,
        fixture={"README.md": "payments service\n"},
        skills=[SKILL],
        target=0,
    )
