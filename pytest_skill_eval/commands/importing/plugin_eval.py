"""A `claude plugin eval` plugin's cases (`evals/<case>/case.yaml` or `prompt.md` + `graders/`).

The eval dir is the manifest's `experimental.evals`, else `evals/`; a case is a folder below it
holding `case.yaml`, `prompt.md` or `graders/*.md` (`results/` and `mocks/` are not cases), the
two forms merging as Claude Code merges them. The candidate gets every `skills/<name>/SKILL.md`
of the plugin; the baseline none, as their without arm has no plugin. A case with a `tool_used`
grader on `Skill` gives a description group `<case>-trigger`; its other graders give a body
group `<case>`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..scaffold import definition_id
from .graders import NEUTRAL, literal, map_graders
from .reading import frontmatter, read_json, read_yaml
from .suite import Fidelity, Imported, SourceError, Subject, body_group, description_group

NOT_CASES = ("results", "mocks")
# Frontmatter keys of prompt.md that are the case's own; the others are execution keys.
TOP_LEVEL = ("schema_version", "name", "description", "tags", "plugins", "runs", "expected_outcome")
DROPPED_TOOLS = ("Glob", "Grep", "LS", "Skill")
# Plugin parts that are not SKILL.md packages, and why each is left out.
PLUGIN_PARTS = {
    "commands": "only SKILL.md packages are evaluated",
    "agents": "only SKILL.md packages are evaluated",
    "hooks": "only SKILL.md packages are evaluated",
    ".mcp.json": "no MCP server is given to the agent",
    "mocks": "MCP mocks: no MCP server is mocked, so graders on mock calls cannot map",
}
# Fields kept only in IMPORTED.md: (key path, why).
UNMAPPED_FIELDS = (
    (("runs",), "one --skill-eval-trials for the whole invocation"),
    (("execution", "max_turns"), "no turn limit; the invocation's silence timeout applies"),
    (("execution", "timeout_seconds"), "no wall-clock limit per run"),
    (("execution", "env"), "not carried: declare it in runtime.environment.literal"),
    (("execution", "append_system_prompt"), "not carried: declare it as a context file"),
    (("context", "scaffold_script"), "not run: the fixture is empty; commit its output as one"),
    (("context", "add_dirs"), "no readable-but-not-injected directories"),
    (("context", "history_file"), "no resumed session"),
    (("plugins",), "other plugins' skills are not added"),
    (("tags",), "no tags: select groups with --skill-eval-group"),
)


def import_plugin(plugin: Path, target: str | None) -> Imported:
    """Every case of the plugin in `plugin` as groups, with a note for every item."""
    manifest = plugin / ".claude-plugin" / "plugin.json"
    meta: Any = read_json(manifest) if manifest.is_file() else {}
    meta = meta if isinstance(meta, dict) else {}
    experimental = meta.get("experimental")
    evals = experimental.get("evals") if isinstance(experimental, dict) else None
    eval_dir = plugin / (evals if isinstance(evals, str) else "evals")
    skills = sorted(f"skills/{path.parent.name}" for path in (plugin / "skills").glob("*/SKILL.md"))
    if not skills:
        raise SourceError(f"{plugin / 'skills'}: no skills/<name>/SKILL.md; import reads skills")
    name = str(meta.get("name") or plugin.name)
    imported = Imported(plugin, definition_id(name, "plugin"))
    for part, why in PLUGIN_PARTS.items():
        if (plugin / part).exists() or (eval_dir / part).exists():
            imported.note(name, part, Fidelity.NOT_IMPORTED, why)
    cases = case_folders(eval_dir)
    if not cases:
        raise SourceError(f"{eval_dir}: no case (a folder with case.yaml, prompt.md or graders/)")
    for folder in cases:
        add_case(imported, load_case(folder), skills, target)
    return imported


def case_folders(eval_dir: Path) -> list[Path]:
    """The case folders below `eval_dir`, in path order."""
    found: list[Path] = []
    for folder in sorted(p for p in eval_dir.rglob("*") if p.is_dir()):
        parts = folder.relative_to(eval_dir).parts
        if parts[0] in NOT_CASES or any(f in folder.parents for f in found):
            continue
        if (
            (folder / "case.yaml").is_file()
            or (folder / "prompt.md").is_file()
            or any((folder / "graders").glob("*.md"))
        ):
            found.append(folder)
    return found


def load_case(folder: Path) -> dict[str, Any]:
    """The case as Claude Code merges it: `case.yaml`, then `prompt.md` and `graders/*.md`."""
    case: dict[str, Any] = {"name": folder.name}
    path = folder / "case.yaml"
    if path.is_file():
        data = read_yaml(path)
        if not isinstance(data, dict):
            raise SourceError(f"{path}: not a mapping of case fields")
        major = str(data.get("schema_version", "1")).split(".", 1)[0]
        if not major.isdigit() or int(major) > 1:
            raise SourceError(f"{path}: schema_version {data.get('schema_version')} is not 1.x")
        for key, kind in (("execution", dict), ("context", dict), ("graders", list)):
            if not isinstance(data.get(key, kind()), kind):
                raise SourceError(f"{path}: {key} must be a {kind.__name__}")
        case.update(data)
    case["execution"] = dict(case.get("execution") or {})
    case["graders"] = list(case.get("graders") or [])
    path = folder / "prompt.md"
    if path.is_file():
        front, body = frontmatter(path)
        for key, value in front.items():
            execution = key not in TOP_LEVEL
            (case["execution"] if execution else case)[key] = value
        case["execution"]["prompt"] = body.strip()
    for grader in sorted((folder / "graders").glob("*.md")):
        front, body = frontmatter(grader)
        if "type" not in front:
            raise SourceError(f"{grader}: its frontmatter needs type: (regex, llm, …)")
        key = "pattern" if front["type"] == "regex" else "criteria"
        case["graders"].append({"name": grader.stem, key: body.strip(), **front})
    prompt = case["execution"].get("prompt")
    where = folder / ("prompt.md" if (folder / "prompt.md").is_file() else "case.yaml")
    if not isinstance(prompt, str) or not prompt.strip():
        raise SourceError(f"{where}: no prompt (execution.prompt, or the body of prompt.md)")
    if not case["graders"] or not all(isinstance(g, dict) and "name" in g for g in case["graders"]):
        raise SourceError(f"{where}: every case needs graders, each with a name")
    if "TODO" in prompt or any("TODO" in str(g.get("criteria", "")) for g in case["graders"]):
        raise SourceError(f"{where}: still holds a TODO template line; write the case first")
    return case


def pick_target(
    case: dict[str, Any], skill_graders: list[dict[str, Any]], skills: list[str], given: str | None
) -> int:
    """The target's index: the skill a Skill grader names, the only skill, or `--target`."""
    names = [skill.split("/", 1)[1] for skill in skills]
    for grader in skill_graders:
        text = literal(str(grader.get("input_match", "")))
        named = (text or "").rsplit(":", 1)[-1]
        if named in names:
            return names.index(named)
    if given is not None and given in names:
        return names.index(given)
    if len(skills) == 1:
        return 0
    raise SourceError(
        f"case {case['name']}: the plugin has {len(skills)} skills ({', '.join(names)}) and the "
        "case names none; pass --target SKILL"
    )


def add_case(
    imported: Imported, case: dict[str, Any], skills: list[str], given: str | None
) -> None:
    """The case's trigger and body groups, and its notes."""
    where = f"case {case['name']}"
    graders: list[dict[str, Any]] = case["graders"]
    skill_graders = [
        g for g in graders if g.get("type") == "tool_used" and g.get("tool") == "Skill"
    ]
    others = [g for g in graders if g not in skill_graders]
    target = pick_target(case, skill_graders, skills, given)
    prompt = str(case["execution"]["prompt"])
    ident = definition_id(str(case["name"]), "case")
    for grader in skill_graders:
        least, most = grader.get("min", 1), grader.get("max")
        item = f"{grader['name']} (tool_used Skill)"
        if most not in (None, 0) or (most is None and least != 1):
            imported.note(
                where, item, Fidelity.NOT_IMPORTED, f"min {least}, max {most}: no read counts"
            )
            continue
        group_id = imported.unique_id(f"{ident[:56]}-trigger")
        reads = most is None
        subject = Subject(group_id, prompt, tuple(skills), target)
        imported.groups.append(description_group(subject, reads=reads))
        becomes = f"group {group_id}: `skill-read` `{'by-turn' if reads else 'never'}` on both"
        imported.note(
            where, item, Fidelity.EXACT, becomes + " variants (the baseline is measured too)"
        )
    if others:
        mapped = map_graders(others)
        group_id = imported.unique_id(ident)
        tools = body_tools(imported, where, case["execution"].get("allowed_tools") or [])
        subject = Subject(group_id, prompt, tuple(skills), target)
        checks, questions = mapped.expectations, mapped.questions
        group = body_group(subject, subject.definition("body", tools, checks, questions))
        model = case["execution"].get("model")
        if isinstance(model, str):
            group.definition["model"] = {"model": f"anthropic/{model}"}
            imported.note(where, "execution.model", Fidelity.EXACT, f"model anthropic/{model}")
        imported.groups.append(group)
        imported.note(
            where,
            "the case",
            Fidelity.APPROXIMATE,
            f"body group {group_id}: the skill is delivered on turn one, where the case loads "
            "the plugin and lets the agent choose",
        )
        for fidelity, item, becomes in mapped.notes:
            imported.note(where, item, fidelity, becomes)
    field_notes(imported, where, case)


def body_tools(imported: Imported, where: str, allowed: list[Any]) -> list[str]:
    """`read` (theirs is on by default) and the neutral tools of `allowed_tools`."""
    tools = ["read"]
    for tool in map(str, allowed):
        neutral = NEUTRAL.get(tool)
        if neutral is not None:
            tools += [] if neutral in tools else [neutral]
        elif tool not in DROPPED_TOOLS:
            imported.note(
                where, f"allowed_tools {tool}", Fidelity.NOT_IMPORTED, "not a neutral tool"
            )
    return tools


def field_notes(imported: Imported, where: str, case: dict[str, Any]) -> None:
    """A note for each field of the case that no group field carries."""
    for key in ("description", "expected_outcome"):
        if case.get(key):
            imported.note(where, key, Fidelity.NOT_GRADED, f"kept here only: {case[key]}")
    for path, why in UNMAPPED_FIELDS:
        value: Any = case
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value not in (None, [], {}, ""):
            shown = json.dumps(value, ensure_ascii=False)
            imported.note(where, f"{'.'.join(path)} {shown}", Fidelity.NOT_IMPORTED, why)
