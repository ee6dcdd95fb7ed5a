"""The three groups a host's own end-to-end run holds (a two-turn activation through its skill
tool and the path guard, a body group using every kind of expectation with declared context, and
declared commands), and what the tests read of that one run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.files import read_json, write
from tests.support.roots import Group, runtime, skill, variant


def activation_case(root: Path, host: str, fixture: str = "fixture") -> Group:
    """Two turns: a greeting, then the skill by the host's own tool and a read outside the
    workspace (`fixture` its folder)."""
    outside = root / "outside.txt"
    return Group(
        id="activation",
        type="description",
        turns=["Hello there.", "Log that CSV export handles semicolons."],
        tools=["read"],
        fixture=fixture,
        runtime=runtime(host=host),
        candidate=variant([skill(root, "changelog-keeper")], 0),
        expectations=[
            {"id": "reads-skill", "kind": "skill-read", "variant": "candidate",
             "expect": "by-turn", "turn": 2},
        ],
        scripts={
            "candidate": [
                {"text": "Hi."},
                {"tool_calls": [{"name": "skill", "arguments": {"name": "changelog-keeper"}}]},
                {"tool_calls": [{"name": "read", "arguments": {"path": str(outside)}}]},
                {"text": "- Handle semicolons in CSV export"},
            ]
        },
    )  # fmt: skip


def body_case(root: Path, host: str) -> Group:
    """A body group: a skill resource read, an edit, a write, declared context."""
    declared = skill(root, "note-taker")
    write(root / declared / "references" / "guide.md", "Write result.json.\n")
    write(root / "fixture" / "notes.txt", "alpha\nbeta\n")
    write(root / "context" / "style.md", "Always write CONTEXT-MARKER-7 in replies.\n")
    expect: list[dict[str, Any]] = [
        {"id": "read-guide", "kind": "resource-read", "resource": "skill", "index": 0,
         "path": "references/guide.md", "expect": "read"},
        {"id": "wrote", "kind": "path", "path": "result.json", "expect": "exists"},
        {"id": "status", "kind": "json", "path": "result.json", "expect": "field-equals",
         "pointer": "/status", "value": "complete"},
        {"id": "changed", "kind": "changed-paths", "expect": "equals",
         "paths": ["notes.txt", "result.json"]},
        {"id": "edited", "kind": "file-text", "path": "notes.txt", "expect": "equals",
         "value": "alpha\ngamma\n"},
        {"id": "reply", "kind": "response-text", "expect": "equals", "value": "Tidied."},
        {"id": "edit-tool", "kind": "tool-call", "tool": "edit", "expect": "succeeded",
         "argumentContains": ["notes.txt"]},
        {"id": "context-seen", "kind": "context-text", "value": "CONTEXT-MARKER-7",
         "expect": "contains"},
    ]  # fmt: skip
    calls = [
        ("read", {"path": "{{skill:0}}/references/guide.md"}),
        ("read", {"path": "notes.txt"}),
        ("edit", {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}),
        ("write", {"path": "result.json", "content": '{"status": "complete"}'}),
    ]
    return Group(
        id="body",
        turns=["Tidy the notes."],
        tools=["read", "write", "edit"],
        runtime=runtime(host=host),
        candidate=variant([declared], 0, context=["context/style.md"]),
        expectations=[{**e, "variant": "candidate"} for e in expect],
        scripts={
            "candidate": [
                *({"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls),
                {"text": "Tidied."},
            ]
        },
    )


def commands_case(root: Path, host: str) -> Group:
    """Declared commands: the evaluator's tool runs one; the host's shell is never offered."""
    return Group(
        id="commands",
        turns=["Say hello."],
        tools=["read", "run_command"],
        runtime=runtime(host=host),
        candidate=variant([skill(root, "note-taker")], 0),
        commands=[{"id": "hello", "argv": ["sh", "-c", "echo COMMAND-RAN-31 > ran.txt"]}],
        expectations=[
            {"id": "ran", "kind": "tool-call", "variant": "candidate", "tool": "run_command",
             "expect": "succeeded"},
            {"id": "ran-file", "kind": "path", "variant": "candidate", "path": "ran.txt",
             "expect": "exists"},
        ],
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "hello"}}]},
                {"text": "Said."},
            ]
        },
    )  # fmt: skip


def group_dir(root: Path, group: str, host: str) -> Path:
    """A group's directory in the one result under `root`."""
    (result,) = (root / ".skill-eval" / "runs").iterdir()
    return result / "groups" / f"{group}@{host}"


def candidate_run(root: Path, group: str, host: str) -> dict[str, Any]:
    """The candidate's run.json of a group."""
    run: dict[str, Any] = read_json(group_dir(root, group, host) / "candidate" / "run.json")
    return run


def check_states(root: Path, group: str, host: str) -> dict[str, str]:
    """Each check's state in a group's grade."""
    grade = read_json(group_dir(root, group, host) / "deterministic-grade.json")
    return {c["id"]: c["state"] for c in grade["checks"]}


def chat_texts(request: dict[str, Any]) -> str:
    """Every text the model was sent in one chat-completions request, and its tool names."""
    body = request["body"]
    tools = [t.get("function", {}).get("name") for t in body.get("tools", [])]
    return json.dumps(body.get("messages", [])) + json.dumps(tools)
