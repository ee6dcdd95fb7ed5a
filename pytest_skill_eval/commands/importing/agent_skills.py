"""The Agent Skills eval files: `evals/evals.json` and trigger sets `[{query, should_trigger}]`.

An eval (`{id, prompt, expected_output, files, assertions}`, or skill-creator's `expectations`)
becomes a body group: its prompt, its files copied into a fixture, and its assertions, which are
judged in prose, as review questions. A trigger query becomes a description group: the candidate
should read the skill when `should_trigger` is true, and never read it when it is false.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..scaffold import definition_id
from .suite import Fidelity, Imported, SourceError, Subject, body_group, description_group

SPELLINGS = ("assertions", "expectations")


def kind_of(data: Any) -> str | None:
    """`evals` for an evals.json, `triggers` for a trigger set, else None."""
    if isinstance(data, dict) and isinstance(data.get("evals"), list):
        return "evals"
    if isinstance(data, list) and all(isinstance(q, dict) and "query" in q for q in data):
        return "triggers"
    return None


def import_evals(path: Path, data: dict[str, Any], skill: Path) -> Imported:
    """Each eval of `data` (read from `path`) as a body group for the skill in `skill`."""
    imported = Imported(path, definition_id(f"{skill.name}-evals", "skill"))
    named = data.get("skill_name")
    if isinstance(named, str) and named != skill.name:
        imported.note(
            "skill_name", named, Fidelity.NOT_IMPORTED, f"the suite evaluates {skill.name}"
        )
    for index, case in enumerate(data["evals"]):
        where = f"{path}: evals[{index}]"
        if not isinstance(case, dict) or not isinstance(case.get("prompt"), str):
            raise SourceError(f"{where} has no prompt; each eval needs a prompt string")
        ident = imported.unique_id(definition_id(f"eval-{case.get('id', index + 1)}", "eval"))
        questions = [str(q) for key in SPELLINGS for q in case.get(key) or []]
        expected = case.get("expected_output")
        if isinstance(expected, str) and expected.strip():
            questions.insert(0, f"Does the outcome match what is expected: {expected.strip()}")
        fixture = add_files(imported, ident, case.get("files") or [], skill, where)
        subject = Subject(ident, case["prompt"], (skill.name,), 0)
        tools = ["read", "write", "edit"]
        definition = subject.definition("body", tools, [], questions, fixture)
        imported.groups.append(body_group(subject, definition))
        label = f"eval {case.get('id', index + 1)}"
        imported.note(
            label, "prompt", Fidelity.APPROXIMATE, f"body group {ident} (the skill delivered)"
        )
        for key in SPELLINGS:
            for text in case.get(key) or []:
                imported.note(
                    label, f"{key[:-1]}: {text}", Fidelity.NOT_GRADED, "a review question"
                )
    return imported


def add_files(
    imported: Imported, ident: str, files: list[Any], skill: Path, where: str
) -> str | None:
    """Copy an eval's `files` (relative to the skill) into its fixture; the fixture's path in
    the suite."""
    if not files:
        return None
    folder = f"fixtures/{ident}"
    for name in map(str, files):
        source = skill / name
        if not source.is_file():
            raise SourceError(f"{where}: files names {source}, which is not a file")
        imported.fixtures[f"{folder}/{Path(name).name}"] = source
        imported.note(ident, f"file {name}", Fidelity.EXACT, f"{folder}/{Path(name).name}")
    return folder


def import_triggers(path: Path, data: list[dict[str, Any]], skill: Path) -> Imported:
    """Each query of the trigger set as a description group for the skill in `skill`."""
    imported = Imported(path, definition_id(f"{skill.name}-triggers", "skill"))
    for index, query in enumerate(data, start=1):
        fires = query.get("should_trigger")
        if not isinstance(query["query"], str) or not isinstance(fires, bool):
            raise SourceError(
                f"{path}: query {index} needs a query string and should_trigger true or false"
            )
        ident = f"{'should' if fires else 'should-not'}-trigger-{index:02d}"
        imported.groups.append(
            description_group(Subject(ident, query["query"], (skill.name,), 0), reads=fires)
        )
        check = "`skill-read` `by-turn` 1" if fires else "`skill-read` `never`"
        imported.note(f"query {index}", query["query"], Fidelity.EXACT, f"group {ident}: {check}")
    imported.note(
        "the set",
        "runs per query, trigger-rate threshold, train/validation split",
        Fidelity.NOT_IMPORTED,
        "trials come from --skill-eval-trials; the rate is each group's reads over its trials",
    )
    return imported
