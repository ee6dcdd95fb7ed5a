"""Small definition roots on disk: skills, fixtures, groups, a suite and the scripts they replay.

Two shapes serve the tests: `body_group` + `make_root` (one answer-writer skill, a fixture, body
groups whose scripts are keyed `"<group>/<variant>[-trialK]"`) and `Group` + `build` (any group
type, turns, runtime and commands, scripts per group).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_skill_eval.evidence.layout import group_dir_name
from tests.support.files import write

SKILL = """---
name: answer-writer
description: Write the answer to answer.txt. Use when asked for an answer file.
---

Write the single word `yes` to `answer.txt`, then reply `done`.
"""
SKILL_DESCRIPTION = "Record changes in CHANGELOG.md. Use when asked to log or note a change."
VARIANTS = ("baseline", "candidate")


def write_answer(text: str) -> list[dict[str, Any]]:
    """A script whose model writes `text` to answer.txt, then replies done."""
    __tracebackhide__ = True
    return [
        {
            "response": {
                "tool_calls": [
                    {"name": "write", "arguments": {"path": "answer.txt", "content": text}}
                ],
                "usage": {"input": 1000, "output": 20},
            }
        },
        {"response": {"text": "done", "usage": {"input": 1100, "output": 5}}},
    ]


def variant(
    skills: Sequence[str] = (), target: int | None = None, context: Sequence[str] = ()
) -> dict[str, Any]:
    """One variant environment from the working tree."""
    __tracebackhide__ = True
    return {
        "source": {"kind": "working-tree"},
        "skills": list(skills),
        "target": target,
        "context": list(context),
    }


def body_group(group_id: str, **overrides: Any) -> dict[str, Any]:
    """A body group: baseline without the skill, candidate with it; answer.txt must say yes."""
    __tracebackhide__ = True
    group: dict[str, Any] = {
        "schema_version": 1,
        "kind": "group",
        "id": group_id,
        "type": "body",
        "input": {"prompt": "Write the answer file."},
        "fixture": "fixture",
        "tools": ["read", "write", "edit"],
        "variants": {
            "baseline": variant(),
            "candidate": variant(["skills/answer-writer"], target=0),
        },
        "expectations": [
            {
                "id": f"{name}-says-yes",
                "kind": "file-text",
                "variant": name,
                "path": "answer.txt",
                "expect": "contains",
                "value": "yes",
                "comparison": "says-yes",
            }
            for name in VARIANTS
        ],
        "review_questions": [],
    }
    group.update(overrides)
    return group


def write_suite(root: Path, group_ids: Iterable[str], suite_id: str = "suite") -> Path:
    """`suite.json` listing `groups/<id>.json` for each id; returns its path."""
    __tracebackhide__ = True
    refs = [f"groups/{group_id}.json" for group_id in group_ids]
    suite = {"schema_version": 1, "kind": "suite", "id": suite_id, "groups": refs}
    return write(root / "suite.json", json.dumps(suite, indent=2))


def write_script(path: Path, interactions: Sequence[Mapping[str, Any]]) -> Path:
    """One scripted-model cassette (`version: 1`) at `path`."""
    __tracebackhide__ = True
    return write(path, yaml.safe_dump({"version": 1, "interactions": list(interactions)}))


def make_root(
    root: Path,
    groups: Sequence[Mapping[str, Any]],
    scripts: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    suite_id: str = "suite",
) -> Path:
    """Write skill, fixture, groups, suite and scripts (`"<group>/<variant>[-trialK]"` keys)."""
    __tracebackhide__ = True
    write(root / "skills" / "answer-writer" / "SKILL.md", SKILL)
    write(root / "fixture" / "README.md", "A task.\n")
    (root / "groups").mkdir()
    for group in groups:
        write(root / "groups" / f"{group['id']}.json", json.dumps(group, indent=2))
    write_suite(root, [group["id"] for group in groups], suite_id)
    for key, interactions in scripts.items():
        write_script(root / "scripts" / f"{key}.yaml", interactions)
    return root


#: The real host that starts fastest (a native binary, about 0.1 s of CPU against Pi's 2 s):
#: tests of the plugin's own machinery (scheduling, shards, merges) run their subjects on it.
FAST_HOST = "codex"


def on_fast_host() -> dict[str, Any]:
    """`body_group` keyword arguments that put a group on FAST_HOST."""
    __tracebackhide__ = True
    return {"runtime": runtime(host=FAST_HOST)}


def fast_dir(group_id: str) -> str:
    """A group's result directory name on FAST_HOST (`<id>@<host>`)."""
    return group_dir_name(group_id, FAST_HOST)


def answers_root(
    root: Path,
    answers: Mapping[str, str | Sequence[Mapping[str, Any]]],
    host: str = FAST_HOST,
) -> Path:
    """`make_root` with one body group on `host` per group the keys name (in order): a text is
    a script writing that answer, anything else the script itself.
    `{"g/baseline": "no", "g/candidate-trial2": "yes"}`."""
    __tracebackhide__ = True
    on = {} if host == "pi" else {"runtime": runtime(host=host)}
    groups = [
        body_group(group_id, **on) for group_id in dict.fromkeys(k.split("/")[0] for k in answers)
    ]
    scripts = {k: write_answer(v) if isinstance(v, str) else v for k, v in answers.items()}
    return make_root(root, groups, scripts)


def unscripted_root(root: Path) -> Path:
    """One body group on Pi and an empty scripts folder: a root for runs refused before any
    subject starts."""
    __tracebackhide__ = True
    made = make_root(root, [body_group("g")], {})
    (made / "scripts").mkdir()
    return made


def improving_root(root: Path, count: int, host: str = "pi") -> Path:
    """Groups g0 … g{count-1} on `host`: each baseline answers "no", each candidate "yes"
    (fail-to-pass)."""
    __tracebackhide__ = True
    ids = [f"g{i}" for i in range(count)]
    scripts = {f"{g}/baseline": write_answer("no") for g in ids}
    scripts |= {f"{g}/candidate": write_answer("yes") for g in ids}
    on = {} if host == "pi" else {"runtime": runtime(host=host)}
    return make_root(root, [body_group(g, **on) for g in ids], scripts)


def skill(root: Path, name: str, body: str = "Follow these steps.\n") -> str:
    """A skill directory `skills/<name>/SKILL.md`; returns its declared path."""
    __tracebackhide__ = True
    text = f"---\nname: {name}\ndescription: {SKILL_DESCRIPTION}\n---\n\n# {name}\n\n{body}"
    write(root / "skills" / name / "SKILL.md", text)
    return f"skills/{name}"


@dataclass(kw_only=True)
class Group:
    """A group definition plus the scripts its variants replay (responses, one per call).

    A body group's workspace starts as the root's `fixture` folder unless `fixture` names
    another (None: an empty workspace); a description group has no fixture."""

    id: str
    type: str = "body"
    turns: Sequence[str]
    tools: Sequence[str]
    candidate: dict[str, Any]
    baseline: dict[str, Any] = field(default_factory=variant)
    fixture: str | None = "fixture"
    commands: Sequence[Mapping[str, Any]] | None = None
    runtime: Mapping[str, Any] | None = None
    expectations: Sequence[Mapping[str, Any]] = ()
    scripts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def definition(self) -> dict[str, Any]:
        """The group JSON."""
        __tracebackhide__ = True
        prompt: dict[str, Any] = (
            {"prompt": self.turns[0]} if len(self.turns) == 1 else {"turns": list(self.turns)}
        )
        group: dict[str, Any] = {
            "schema_version": 1,
            "kind": "group",
            "id": self.id,
            "type": self.type,
            "input": prompt,
            "fixture": self.fixture if self.type == "body" else None,
            "tools": list(self.tools),
            "variants": {"baseline": self.baseline, "candidate": self.candidate},
            "expectations": list(self.expectations),
            "review_questions": [],
        }
        if self.commands is not None:
            group["commands"] = list(self.commands)
        if self.runtime is not None:
            group["runtime"] = dict(self.runtime)
        return group


def runtime(
    prompt: str = "isolated", literal: Mapping[str, str] | None = None, host: str = "pi"
) -> dict[str, Any]:
    """A runtime profile on `host` with no bundles, session or inherited environment."""
    __tracebackhide__ = True
    return {
        "host": host,
        "prompt": prompt,
        "session": False,
        "extensions": [],
        "environment": {"literal": dict(literal or {}), "inherit": []},
    }


def build(root: Path, groups: Iterable[Group], suite_id: str = "subject-e2e") -> Path:
    """Write each group, its scripts, and a suite listing them; returns the suite path."""
    __tracebackhide__ = True
    ids = []
    for group in groups:
        write(root / "groups" / f"{group.id}.json", json.dumps(group.definition(), indent=2))
        ids.append(group.id)
        for name, responses in group.scripts.items():
            write_script(
                root / "scripts" / group.id / f"{name}.yaml", [{"response": r} for r in responses]
            )
    return write_suite(root, ids, suite_id)


def context_check(surface: str, value: str) -> dict[str, Any]:
    """A `context-text` expectation on the candidate: `surface` contains `value`."""
    return {
        "id": f"context-{surface}",
        "kind": "context-text",
        "variant": "candidate",
        "surface": surface,
        "value": value,
        "expect": "contains",
    }


def kinds_group(root: Path, runtime: dict[str, Any]) -> Group:
    """A body group whose candidate reads its skill's reference file and writes result.json:
    resource-read, path and json checks, for any host."""
    declared = skill(root, "note-taker")
    write(root / declared / "references" / "guide.md", "Write result.json.\n")
    return Group(
        id="kinds",
        turns=["Tidy the notes."],
        tools=["read", "write"],
        runtime=runtime,
        candidate=variant([declared], 0),
        expectations=[
            {
                "id": "read-guide",
                "kind": "resource-read",
                "variant": "candidate",
                "resource": "skill",
                "index": 0,
                "path": "references/guide.md",
                "expect": "read",
            },
            {
                "id": "wrote",
                "kind": "path",
                "variant": "candidate",
                "path": "result.json",
                "expect": "exists",
            },
            {
                "id": "status",
                "kind": "json",
                "variant": "candidate",
                "path": "result.json",
                "expect": "field-equals",
                "pointer": "/status",
                "value": "complete",
            },
        ],
        scripts={
            "candidate": [
                {
                    "tool_calls": [
                        {"name": "read", "arguments": {"path": "{{skill:0}}/references/guide.md"}}
                    ]
                },
                {
                    "tool_calls": [
                        {
                            "name": "write",
                            "arguments": {
                                "path": "result.json",
                                "content": '{"status": "complete"}',
                            },
                        }
                    ]
                },
                {"text": "Done."},
            ]
        },
    )
