"""`skill-eval init [SKILL_DIR]`: a first suite for a skill, written next to it, that runs.

The skill's parent folder becomes the definition root. Under `evals/<skill folder>/` go a suite
of two groups, a description group (does a natural prompt make the agent read the skill?) and
a body group (does the delivered skill change the work?), a fixture, and the scripts that
replay both offline through the scripted model. The project's `pyproject.toml` gets the ini
keys that make `pytest` alone run the suite: the nearest one from the root up to the top of its
Git work tree, else a new one in the root (pytest's rootdir is where it is, and the hosts'
`node_modules` are looked for up to it). Nothing is overwritten: an existing file, or ini keys
already set, stop it before it writes anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import SkillEvalError

PYPROJECT = "pyproject.toml"
TABLE = "[tool.pytest.ini_options]"
# Config files pytest reads before pyproject.toml in the same folder: keys there would win.
PRECEDING = ("pytest.ini", ".pytest.ini")
OUTPUT = "OUTPUT.md"


class ScaffoldError(SkillEvalError):
    """A scaffold that cannot be written: no skill there, or it would overwrite something."""


@dataclass(frozen=True, slots=True)
class Skill:
    """The skill a suite is scaffolded for."""

    folder: Path
    name: str  # its frontmatter name, else its folder's
    summary: str  # the first sentence of its description (ending in a stop), else ""

    @property
    def suite_id(self) -> str:
        """A valid definition id made of the skill's name."""
        return definition_id(self.name, "skill")


def definition_id(name: str, prefix: str) -> str:
    """A valid definition id made of `name`: lowercase words joined by `-`, at most 64
    characters, starting with a letter (`prefix-` is put before one that does not)."""
    words = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    ident = words if words[:1].isalpha() else f"{prefix}-{words}".rstrip("-")
    return ident[:64].rstrip("-")


def arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Declare `skill-eval init [SKILL_DIR]` on its `parser`."""
    parser.add_argument(
        "skill", nargs="?", default=".", help="the skill's folder, holding SKILL.md (default: .)"
    )


def run(args: argparse.Namespace, root: Path) -> int:
    """Write the scaffold for `args.skill`; print what was written and how to run it.

    The suite's definition root is the skill's parent, never `root`.
    """
    skill = read_skill(Path(args.skill).resolve())
    base = skill.folder.parent
    files = scaffold_files(skill)
    for relative in files:
        if (base / relative).exists():
            raise ScaffoldError(f"{base / relative} exists; init never overwrites a file")
    config = config_folder(base) / PYPROJECT
    new_config = ini_config(config, skill)
    for relative, text in files.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    config.write_text(new_config, encoding="utf-8")
    print(f"configured {config} ({TABLE}: the suite, its scripts, fail on the candidate)")
    print(f"run it: cd {config.parent} && pytest")
    print(
        "then make it yours: the prompts and expectations in the groups, the fixture, and the "
        "scripts (docs/scripts.md), or record real runs (docs/live-runs.md)"
    )
    return 0


def read_skill(folder: Path) -> Skill:
    """The skill in `folder` (its SKILL.md's frontmatter); one line when there is none."""
    manifest = folder / "SKILL.md"
    try:
        text = manifest.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScaffoldError(
            f"{manifest}: no such file; pass the folder holding the skill's SKILL.md"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ScaffoldError(f"{manifest}: cannot read it ({error})") from None
    front: Any = {}
    if text.startswith("---"):
        head, _, _ = text[3:].partition("\n---")
        try:
            front = yaml.safe_load(head) or {}
        except yaml.YAMLError:
            front = {}
    front = front if isinstance(front, dict) else {}
    name = front.get("name") if isinstance(front.get("name"), str) else None
    description = front.get("description")
    summary = ""
    if isinstance(description, str) and description.strip():
        summary = re.split(r"(?<=[.!?])\s", description.strip(), maxsplit=1)[0]
        summary += "" if summary.endswith((".", "!", "?")) else "."
    return Skill(folder, (name or folder.name).strip(), summary)


def config_folder(root: Path) -> Path:
    """Where the ini keys go: the nearest folder from `root` up to the top of its Git work tree
    that holds a pytest config file, else `root` (outside a work tree, `root` alone)."""
    above = [root, *root.parents]
    top = next((folder for folder in above if (folder / ".git").exists()), None)
    if top is None:
        return root
    for folder in above[: above.index(top) + 1]:
        if any((folder / name).is_file() for name in (PYPROJECT, *PRECEDING)):
            return folder
    return root


def ini_config(config: Path, skill: Skill) -> str:
    """`config`'s new text: the ini keys under its pytest table (made when it has none);
    refused where the keys are set already or a file pytest reads first exists."""
    for name in PRECEDING:
        if (config.parent / name).exists():
            raise ScaffoldError(
                f"{config.parent / name} configures pytest here; init writes its keys to "
                f"{PYPROJECT}, which pytest would not read: remove it, or init elsewhere"
            )
    try:
        text = config.read_text(encoding="utf-8") if config.exists() else ""
    except (OSError, UnicodeDecodeError) as error:
        raise ScaffoldError(f"{config}: cannot read it ({error})") from None
    if re.search(r"^\s*skill_eval_definitions\s*=", text, flags=re.MULTILINE):
        raise ScaffoldError(
            f"{config} already names skill_eval_definitions; init never overwrites it: add "
            f"{_relative(skill.folder.parent / _suite(skill), config.parent)}/suite.json there "
            "yourself"
        )
    keys = ini_keys(skill, config.parent)
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.strip() == TABLE:
            return "".join([*lines[: index + 1], keys, *lines[index + 1 :]])
    separator = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
    return f"{text}{separator}{TABLE}\n{keys}"


def ini_keys(skill: Skill, folder: Path) -> str:
    """The ini keys naming the suite, its root and scripts (relative to the config file's
    `folder`, as pytest reads them), and failing on the candidate."""
    root = skill.folder.parent
    suite = _relative(root / _suite(skill), folder)
    return (
        f'skill_eval_definitions = ["{suite}/suite.json"]\n'
        f'skill_eval_root = "{_relative(root, folder)}"\n'
        f'skill_eval_cassettes = "{suite}/scripts"\n'
        'skill_eval_fail_on = "candidate"\n'
    )


def _suite(skill: Skill) -> str:
    return f"evals/{skill.folder.name}"


def _relative(path: Path, folder: Path) -> str:
    return Path(os.path.relpath(path, folder)).as_posix()


def scaffold_files(skill: Skill) -> dict[str, str]:
    """Every file of the scaffold, by path relative to the definition root."""
    suite = _suite(skill)
    scripts = f"{suite}/scripts"
    return {
        f"{suite}/suite.json": json_text(
            {
                "schema_version": 1,
                "kind": "suite",
                "id": skill.suite_id,
                "groups": ["groups/description.json", "groups/body.json"],
            }
        ),
        f"{suite}/groups/description.json": json_text(description_group(skill)),
        f"{suite}/groups/body.json": json_text(body_group(skill, f"{suite}/fixtures/project")),
        f"{suite}/fixtures/project/README.md": (
            "# The project the agent works on\n\n"
            "Each variant gets a fresh copy of this folder as its workspace: replace it with the "
            "files your skill works on.\n"
        ),
        f"{scripts}/description/baseline.yaml": DESCRIPTION_BASELINE,
        f"{scripts}/description/candidate.yaml": DESCRIPTION_CANDIDATE,
        f"{scripts}/body/baseline.yaml": BODY_BASELINE,
        f"{scripts}/body/candidate.yaml": BODY_CANDIDATE,
    }


def _variants(skill: Skill) -> dict[str, Any]:
    source = {"kind": "working-tree"}
    return {
        "baseline": {"source": source, "skills": [], "target": None, "context": []},
        "candidate": {
            "source": source,
            "skills": [skill.folder.name],
            "target": 0,
            "context": [],
        },
    }


def description_group(skill: Skill) -> dict[str, Any]:
    """Does a natural prompt, one that does not name the skill, make the agent read it?"""
    return {
        "schema_version": 1,
        "kind": "group",
        "id": "description",
        "type": "description",
        "input": {
            "prompt": f"Please help me with this: {skill.summary}"
            if skill.summary
            else "Please help me with the task in this project."
        },
        "fixture": None,
        "tools": ["read"],
        "variants": _variants(skill),
        "expectations": [
            _read("baseline"),
            _read("candidate"),
        ],
        "review_questions": [],
    }


def _read(variant: str) -> dict[str, Any]:
    return {
        "id": f"{variant}-reads-skill",
        "kind": "skill-read",
        "variant": variant,
        "expect": "by-turn",
        "turn": 1,
        "comparison": "reads-skill",
    }


def body_group(skill: Skill, fixture: str) -> dict[str, Any]:
    """Does the delivered skill change the work? Here: whether an OUTPUT.md is written."""
    output = {"kind": "path", "path": OUTPUT, "expect": "exists", "comparison": "writes-output"}
    return {
        "schema_version": 1,
        "kind": "group",
        "id": "body",
        "type": "body",
        "input": {"prompt": f"{skill.summary} Write the outcome to {OUTPUT}.".lstrip()},
        "fixture": fixture,
        "tools": ["read", "write", "edit"],
        "variants": _variants(skill),
        "expectations": [
            {"id": "baseline-output", "variant": "baseline", **output},
            {"id": "candidate-output", "variant": "candidate", **output},
            {
                "id": "candidate-reply",
                "kind": "response-text",
                "variant": "candidate",
                "expect": "contains",
                "value": OUTPUT,
            },
        ],
        "review_questions": ["Did the work follow the skill's instructions?"],
    }


def json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def script_text(comment: str, *responses: dict[str, Any]) -> str:
    """A script (docs/scripts.md): `comment`, then one interaction per response."""
    script = {"version": 1, "interactions": [{"response": r} for r in responses]}
    return f"# {comment}\n" + yaml.safe_dump(script, sort_keys=False, allow_unicode=True)


def tool_call(tool: str, input_tokens: int, **arguments: str) -> dict[str, Any]:
    call = {"name": tool, "arguments": arguments}
    return {"tool_calls": [call], "usage": {"input": input_tokens, "output": 20}}


def text_answer(text: str, input_tokens: int) -> dict[str, Any]:
    return {"text": text, "usage": {"input": input_tokens, "output": 10}}


DESCRIPTION_BASELINE = script_text(
    "Without the skill the model answers from the prompt alone.",
    text_answer("Here is how I would go about it.", 900),
)
DESCRIPTION_CANDIDATE = script_text(
    "With the skill registered the model reads it first ({{skill:0}}: the first skill's folder).",
    tool_call("read", 1100, path="{{skill:0}}/SKILL.md"),
    text_answer("Following the skill's instructions.", 1500),
)
BODY_BASELINE = script_text(
    "Without the skill the model only replies; it writes no file.",
    text_answer("I would start by looking at the project.", 1000),
)
BODY_CANDIDATE = script_text(
    "With the skill delivered the model writes its outcome, then says where it is.",
    tool_call("write", 1600, path=OUTPUT, content="The outcome, as the skill asks for it."),
    text_answer(f"Wrote the outcome to {OUTPUT}.", 1900),
)
