"""What an import writes: schema-v1 groups, script templates and IMPORTED.md, never overwriting.

Every format is read into an `Imported`: its groups (with the scripts that replay each variant
offline), the fixtures to copy, and a `Note` for every item of the source, saying whether it
maps exactly, approximately, only as a review question, or not at all, and why. The notes are
printed and kept beside the suite, so nothing is dropped silently.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from ...errors import SkillEvalError
from ..scaffold import json_text, script_text, text_answer, tool_call

REPORT = "IMPORTED.md"


class Fidelity(StrEnum):
    """How faithfully a source item is carried, in the order IMPORTED.md lists them."""

    EXACT = "exact"
    APPROXIMATE = "approximate"
    NOT_GRADED = "not graded"  # a review question, answered by the advisory reviewer
    NOT_IMPORTED = "not imported"


class SourceError(SkillEvalError):
    """A source that cannot be imported: unreadable, malformed, or it would overwrite a file."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class Note:
    """One item of the source and what became of it."""

    where: str  # the case, eval or query it belongs to
    item: str  # the grader, field or assertion
    fidelity: Fidelity
    becomes: str  # what it became, or why nothing could


@dataclass(slots=True)
class Group:
    """One group to write: its definition and the script of each variant."""

    definition: dict[str, Any]
    scripts: dict[str, str]  # variant -> script text

    @property
    def id(self) -> str:
        return str(self.definition["id"])


@dataclass(slots=True)
class Imported:
    """A whole import: the suite's groups, the files its fixtures copy, and the notes."""

    source: Path
    suite_id: str
    groups: list[Group] = field(default_factory=list)
    fixtures: dict[str, Path] = field(default_factory=dict)  # path in the suite -> source file
    notes: list[Note] = field(default_factory=list)

    def note(self, where: str, item: str, fidelity: Fidelity, becomes: str) -> None:
        self.notes.append(Note(where, item, fidelity, becomes))

    def unique_id(self, ident: str) -> str:
        """`ident`, or `ident-2`, `ident-3`… when a group already has it."""
        taken = {group.id for group in self.groups}
        candidate, count = ident, 1
        while candidate in taken:
            count += 1
            candidate = f"{ident[:60]}-{count}"
        return candidate


def variants(skills: list[str], target: int) -> dict[str, Any]:
    """No skill for the baseline; the skills, `target` among them, for the candidate."""
    source = {"kind": "working-tree"}
    return {
        "baseline": {"source": source, "skills": [], "target": None, "context": []},
        "candidate": {"source": source, "skills": skills, "target": target, "context": []},
    }


def paired(ident: str, check: dict[str, Any], *, both: bool = True) -> list[dict[str, Any]]:
    """`check` for the candidate, and for the baseline too with a shared comparison."""
    if not both:
        return [{"id": f"candidate-{ident}", "variant": "candidate", **check}]
    return [
        {"id": f"{variant}-{ident}", "variant": variant, **check, "comparison": ident}
        for variant in ("baseline", "candidate")
    ]


@dataclass(frozen=True, slots=True)
class Subject:
    """What a group is about: its id, its prompt, and the candidate's skills and target."""

    ident: str
    prompt: str
    skills: tuple[str, ...]
    target: int

    def definition(
        self,
        kind: str,
        tools: list[str],
        expectations: list[dict[str, Any]],
        questions: list[str],
        fixture: str | None = None,
    ) -> dict[str, Any]:
        """The group definition of type `kind` (description or body)."""
        return {
            "schema_version": 1,
            "kind": "group",
            "id": self.ident,
            "type": kind,
            "input": {"prompt": self.prompt},
            "fixture": fixture,
            "tools": tools,
            "variants": variants(list(self.skills), self.target),
            "expectations": expectations,
            "review_questions": questions,
        }


def description_group(subject: Subject, *, reads: bool) -> Group:
    """Does the prompt make the agent read the target (`reads`), or leave it unread?"""
    check: dict[str, Any] = {"kind": "skill-read", "expect": "by-turn", "turn": 1}
    if not reads:
        check = {"kind": "skill-read", "expect": "never"}
    checks = paired("reads-skill" if reads else "leaves-skill", check)
    candidate = script_text(
        "Template: the model answers without reading the skill; replace it by a recording.",
        text_answer("Here is my answer.", 900),
    )
    if reads:
        skill = f"{{{{skill:{subject.target}}}}}"
        candidate = script_text(
            f"Template: the model reads the target skill ({skill}), then answers; replace it "
            "by a recording.",
            tool_call("read", 1100, path=f"{skill}/SKILL.md"),
            text_answer("Following the skill's instructions.", 1500),
        )
    definition = subject.definition("description", ["read"], checks, [])
    return Group(definition, {"baseline": BASELINE, "candidate": candidate})


def body_group(subject: Subject, definition: dict[str, Any]) -> Group:
    """A body group of `definition` (made by `subject.definition("body", …)`), whose candidate
    template only answers: the work the checks look for is the user's to script or record."""
    candidate = script_text(
        "Template: the skill is delivered and the model only answers; replace it by a "
        "recording (--skill-eval-record) or script the work the checks look for.",
        text_answer("Following the skill's instructions.", 1500),
    )
    return Group(definition, {"baseline": BASELINE, "candidate": candidate})


BASELINE = script_text(
    "Template: without the skill the model answers from the prompt alone; replace it by a "
    "recording.",
    text_answer("Here is my answer.", 900),
)


def suite_files(imported: Imported, prefix: str) -> dict[str, str]:
    """Every text file of the suite, by path relative to the suite's folder, which is `prefix`
    in the definition root (group fixtures are named relative to the root)."""
    files = {
        "suite.json": json_text(
            {
                "schema_version": 1,
                "kind": "suite",
                "id": imported.suite_id,
                "groups": [f"groups/{group.id}.json" for group in imported.groups],
            }
        )
    }
    for group in imported.groups:
        fixture = group.definition["fixture"]
        if fixture is not None:
            group.definition["fixture"] = f"{prefix}/{fixture}"
        files[f"groups/{group.id}.json"] = json_text(group.definition)
        for variant, text in group.scripts.items():
            files[f"scripts/{group.id}/{variant}.yaml"] = text
    files[REPORT] = report(imported)
    return files


def write_suite(imported: Imported, folder: Path, root: Path) -> list[Path]:
    """Write the suite into `folder` in the definition `root`, refusing before anything is
    written if a file exists."""
    texts = suite_files(imported, folder.relative_to(root).as_posix())
    targets = [folder / relative for relative in (*texts, *imported.fixtures)]
    for path in targets:
        if path.exists():
            raise SourceError(f"{path} exists; import never overwrites a file")
    try:
        for relative, text in texts.items():
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        for relative, source in imported.fixtures.items():
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, folder / relative)
    except OSError as error:
        raise SourceError(f"cannot write {folder}: {error.strerror or error}") from None
    return targets


def report(imported: Imported) -> str:
    """IMPORTED.md: where the suite came from and what became of every item of the source."""
    lines = [
        f"# Imported from {imported.source}",
        "",
        "Written by `skill-eval import`. The scripts under `scripts/` are templates that replay "
        "offline: replace them by recordings (`--skill-eval-record`) or by scripts of the work "
        "(docs/scripts.md) before trusting a result. Review questions are answered by "
        "`skill-eval review`, advisory and never graded.",
        "",
    ]
    for fidelity in Fidelity:
        notes = [note for note in imported.notes if note.fidelity == fidelity]
        if not notes:
            continue
        lines += [f"## {fidelity.capitalize()}", "", "| from | item | becomes |", "|---|---|---|"]
        lines += [f"| {_cell(n.where)} | {_cell(n.item)} | {_cell(n.becomes)} |" for n in notes]
        lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
