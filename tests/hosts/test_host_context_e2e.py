"""Declared context in both prompt modes on each host that runs it alone: in one run, a group
whose host prompt the evaluator's replaces (`isolated`) and one that keeps the host's (`host`),
each two turns over declared context, checked on the requests the server received. One case;
what differs by host is a row of `HOSTS`. Gemini CLI runs it inside the run its module shares.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.files import write
from tests.support.hosts import host_params
from tests.support.roots import Group, context_check, runtime, skill, variant
from tests.support.runs import check_states, model_requests, result_dir, run_candidate

pytestmark = pytest.mark.pi

MARKER = "Always write CONTEXT-MARKER-3 in replies."
MODES = ("isolated", "host")
Prompt = Callable[[str, dict[str, Any]], None]


def _claude_code(mode: str, request: dict[str, Any]) -> None:
    system = request["body"]["system"]
    blocks = [system] if isinstance(system, str) else [str(b.get("text", "")) for b in system]
    if mode == "isolated":
        evaluator = blocks[-1]
        assert evaluator.startswith(
            "You are an expert coding assistant operating inside Claude Code"
        )
        assert MARKER in evaluator
        assert "Current working directory: " in evaluator
        assert not any("You are Claude Code" in b for b in blocks)  # the host's prompt is gone
        return
    assert any("You are Claude Code, Anthropic's official CLI" in b for b in blocks)
    appended = blocks[-1].rstrip()
    assert appended.endswith(f"{MARKER}\n</file>\n</context>\n</declared_context>")
    assert '<declared_context>\n<context declared-path="context/style.md">' in appended
    assert not any("operating inside Claude Code for a skill evaluation" in b for b in blocks)


def _codex(mode: str, request: dict[str, Any]) -> None:
    instructions = request["body"].get("instructions") or ""
    developer = "\n".join(
        str(block.get("text", ""))
        for item in request["body"]["input"]
        if item.get("role") == "developer"
        for block in item.get("content", [])
    )
    if mode == "isolated":
        # The evaluator's instructions replace Codex's own, the declared context after them.
        assert "skill evaluation" in instructions + developer
    assert MARKER in instructions + developer


@dataclass(frozen=True)
class Host:
    """How one host shows the system prompt, and whether host mode keeps its session."""

    prompt: Prompt  # checks the first request's system prompt in a mode
    session: bool  # host mode keeps the host's own session (runtime.session)


HOSTS = {
    "claude-code": Host(_claude_code, session=True),  # Claude Code's own transcript
    "codex": Host(_codex, session=False),
}


@pytest.mark.parametrize("name", host_params(HOSTS))
def test_declared_context_reaches_the_model_and_is_observed_in_both_prompt_modes(
    pytester: pytest.Pytester, name: str
) -> None:
    host = HOSTS[name]
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    write(root / "context" / "style.md", f"{MARKER}\n")
    declared = skill(root, "note-taker")
    groups = [
        Group(
            id=f"context-{mode}",
            turns=["Tidy the notes.", "Again, please."],
            tools=["read"],
            runtime={
                **runtime(host=name),
                "prompt": mode,
                "session": host.session and mode == "host",
            },
            candidate=variant([declared], 0, ["context/style.md"]),
            expectations=[
                context_check("system-prompt", "CONTEXT-MARKER-3"),
                context_check("provider-context", "Again"),
            ],
            scripts={"candidate": [{"text": "Tidied."}, {"text": "Tidied again."}]},
        )
        for mode in MODES
    ]
    result = run_candidate(pytester, root, groups)
    assert result.ret == 0, result.stdout.str()
    for mode in MODES:
        group_dir = result_dir(root) / "groups" / f"context-{mode}@{name}"
        assert check_states(group_dir) == {
            "context-system-prompt": "pass",
            "context-provider-context": "pass",
        }, mode
        host.prompt(mode, model_requests(group_dir / "candidate")[0])
        lines = (group_dir / "candidate" / "context-observations.jsonl").read_text("utf-8")
        records = [json.loads(line) for line in lines.splitlines()]
        # One system prompt per turn, one provider context per request, given to its turn.
        assert [(r["turn"], r["surface"]) for r in records] == [
            (1, "system-prompt"),
            (1, "provider-context"),
            (2, "system-prompt"),
            (2, "provider-context"),
        ]
        if host.session:
            sessions = sorted((group_dir / "candidate" / "session").rglob("*.jsonl"))
            assert bool(sessions) is (mode == "host"), sessions
