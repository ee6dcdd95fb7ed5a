"""Small definition roots for end-to-end tests: a skill, a fixture, groups, suite and scripts."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

SKILL = """---
name: answer-writer
description: Write the answer to answer.txt. Use when asked for an answer file.
---

Write the single word `yes` to `answer.txt`, then reply `done`.
"""


def write_answer(text: str) -> list[dict[str, Any]]:
    """A script whose model writes `text` to answer.txt, then replies done."""
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


def body_group(group_id: str, **overrides: Any) -> dict[str, Any]:
    """A body group: baseline without the skill, candidate with it; answer.txt must say yes."""
    group: dict[str, Any] = {
        "schema_version": 1,
        "kind": "group",
        "id": group_id,
        "type": "body",
        "input": {"prompt": "Write the answer file."},
        "fixture": "fixture",
        "tools": ["read", "write", "edit"],
        "variants": {
            "baseline": {
                "source": {"kind": "working-tree"},
                "skills": [],
                "target": None,
                "context": [],
            },
            "candidate": {
                "source": {"kind": "working-tree"},
                "skills": ["skills/answer-writer"],
                "target": 0,
                "context": [],
            },
        },
        "expectations": [
            {
                "id": f"{variant}-says-yes",
                "kind": "file-text",
                "variant": variant,
                "path": "answer.txt",
                "expect": "contains",
                "value": "yes",
                "comparison": "says-yes",
            }
            for variant in ("baseline", "candidate")
        ],
        "review_questions": [],
    }
    group.update(overrides)
    return group


def make_root(
    root: Path,
    groups: Sequence[Mapping[str, Any]],
    scripts: Mapping[str, list[dict[str, Any]]],
) -> Path:
    """Write skill, fixture, groups, suite and scripts (`"<group>/<variant>[-trialK]"` keys)."""
    (root / "skills" / "answer-writer").mkdir(parents=True)
    (root / "skills" / "answer-writer" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (root / "fixture").mkdir(exist_ok=True)
    (root / "fixture" / "README.md").write_text("A task.\n", encoding="utf-8")
    (root / "groups").mkdir()
    refs = []
    for group in groups:
        path = root / "groups" / f"{group['id']}.json"
        path.write_text(json.dumps(group, indent=2), encoding="utf-8")
        refs.append(f"groups/{group['id']}.json")
    suite = {"schema_version": 1, "kind": "suite", "id": "suite", "groups": refs}
    (root / "suite.json").write_text(json.dumps(suite, indent=2), encoding="utf-8")
    for key, interactions in scripts.items():
        path = root / "scripts" / f"{key}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            yaml.safe_dump({"version": 1, "interactions": interactions}), encoding="utf-8"
        )
    return root


def run(pytester: pytest.Pytester, root: Path, *extra: str) -> pytest.RunResult:
    """Run the suite at `root` through the plugin, scripted, in a subprocess."""
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--skill-eval",
        str(root / "suite.json"),
        "--skill-eval-root",
        str(root),
        "--skill-eval-cassettes",
        str(root / "scripts"),
        *extra,
    )


def results(root: Path) -> list[Path]:
    """Result directories (not aggregates), oldest first."""
    runs = root / ".skill-eval" / "runs"
    return sorted(p for p in runs.iterdir() if (p / "invocation.json").is_file())


def aggregates(root: Path) -> list[Path]:
    """Aggregate directories."""
    runs = root / ".skill-eval" / "runs"
    return sorted(p for p in runs.iterdir() if (p / "aggregate.json").is_file())


def read(path: Path) -> Any:
    """Parse a JSON evidence file."""
    return json.loads(path.read_text(encoding="utf-8"))
