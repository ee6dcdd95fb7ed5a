"""Which declared skills the model was offered: each host's catalog, read from the model requests
the loopback server saw, against each declared `SKILL.md`.

Each host lists skills in its own words; its subpackage's `offered.py` says how (`catalog`,
found by the registration as `render` is). This module holds the parsers more than one host
shares, the comparison, and the record (`offered-skills.json`, `evidence/records.py`).

A declared skill is `intact` when the host listed its description unchanged (whitespace aside),
`cut` when it listed a shorter start of it (a trailing `...` or `…` is the host's mark),
`altered` when it listed other text (a description the host made up for a SKILL.md without
one), `absent` when it did not list it, and `unobservable` when no request could show it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..evidence.skill_records import OfferedSkill, OfferedSkillsRecord, OfferedState
from ..modelserver.bodies import request_context

SCHEMA_VERSION = 1
# The catalog Pi, Gemini CLI and opencode write into their system prompts.
_XML_SKILL = re.compile(
    r"<skill>\s*<name>(.*?)</name>\s*<description>(.*?)</description>", re.DOTALL
)
_CUT_MARKS = ("...", "…")


@dataclass(frozen=True)
class Listed:
    """One skill as a host listed it: its name and its description as sent (None: name only)."""

    name: str
    description: str | None


@dataclass(frozen=True)
class DeclaredSkill:
    """One declared skill as its snapshot's `SKILL.md` says: the names a host may list it by
    (its front matter `name`, else its folder) and its description (None: none declared)."""

    index: int
    name: str
    folder: str
    description: str | None


# What a host's `offered.catalog` makes of one request body: the skills it lists, or None when
# the request lists none.
CatalogReader = Callable[[Mapping[str, Any]], "tuple[Listed, ...] | None"]


def xml_catalog(text: str, opening: str = "<available_skills>") -> tuple[Listed, ...] | None:
    """The `<available_skills>` block of a system prompt (Pi, Gemini CLI, opencode)."""
    start = text.find(opening)
    if start < 0:
        return None
    end = text.find("</available_skills>", start)
    block = text[start : end if end >= 0 else len(text)]
    return tuple(
        Listed(html.unescape(name.strip()), html.unescape(description))
        for name, description in _XML_SKILL.findall(block)
    )


def system_prompt_catalog(body: Mapping[str, Any]) -> tuple[Listed, ...] | None:
    """The `<available_skills>` block of one request's system prompt; None when it has none."""
    return xml_catalog(request_context(body).system_prompt)


def line_catalog(text: str, header: str, end: str) -> tuple[Listed, ...] | None:
    """A `- name: description` list after `header`, up to `end` (Claude Code, Codex).

    A line `- name` alone is a skill listed by name only. A description running over several
    lines keeps its line breaks; a line that starts like an entry starts the next entry.
    """
    start = text.find(header)
    if start < 0:
        return None
    block = text[start + len(header) :]
    stop = block.find(end)
    block = block[: stop if stop >= 0 else len(block)]
    entries: list[Listed] = []
    for line in block.split("\n"):
        entry = re.match(r"- ([^\s:]+)(?:: (.*))?$", line)
        if entry:
            entries.append(Listed(entry.group(1), entry.group(2)))
        elif entries and line.strip():
            last = entries[-1]
            entries[-1] = Listed(last.name, f"{last.description or ''}\n{line}")
    return tuple(entries)


def declared_skill(index: int, snapshot: Path, source: str) -> DeclaredSkill:
    """The names and description its `SKILL.md` declares; the name of its declared folder
    (`source`) stands in for a name the front matter lacks. A host that lists such a skill
    anyway lists it under its installed folder (`snapshot`'s name)."""
    front = _front_matter(snapshot / "SKILL.md")
    name, description = front.get("name"), front.get("description")
    return DeclaredSkill(
        index,
        name if isinstance(name, str) and name else Path(source).name,
        snapshot.name,
        description if isinstance(description, str) else None,
    )


def _front_matter(path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    if not text.startswith("---"):
        return {}
    parts = text.split("\n---", 1)
    try:
        value = yaml.safe_load(parts[0].removeprefix("---"))
    except yaml.YAMLError:
        return {}
    return value if isinstance(value, Mapping) else {}


def first_catalog(
    bodies: Sequence[Mapping[str, Any]], read: CatalogReader
) -> tuple[int | None, tuple[Listed, ...]]:
    """The first request that lists skills, and what it lists; (None, ()) when none does."""
    for index, body in enumerate(bodies):
        listed = read(body)
        if listed is not None:
            return index, listed
    return None, ()


def offered_record(
    host: str,
    declared: Sequence[DeclaredSkill],
    bodies: Sequence[Mapping[str, Any]] | None,
    read: CatalogReader,
) -> OfferedSkillsRecord:
    """`offered-skills.json` of one variant: each declared skill against the host's catalog.

    `bodies` are the model requests in arrival order; None where the evaluator saw none (a live
    run talks to its provider directly).
    """
    if bodies is None or not bodies:
        why = (
            "a live run's model requests do not pass through the evaluator"
            if bodies is None
            else "the host sent no model request"
        )
        skills = [_unobservable(skill, why) for skill in declared]
        return {"schema_version": SCHEMA_VERSION, "host": host, "skills": skills, "others": []}
    request, listed = first_catalog(bodies, read)
    by_name = {entry.name: entry for entry in listed}
    matched: set[str] = set()
    skills = []
    for skill in declared:
        entry = by_name.get(skill.name) or by_name.get(skill.folder)
        if entry is not None:
            matched.add(entry.name)
        skills.append(compare(skill, entry))
    others = [entry.name for entry in listed if entry.name not in matched]
    return {
        "schema_version": SCHEMA_VERSION,
        "host": host,
        "request": request,
        "skills": skills,
        "others": others,
    }


def compare(skill: DeclaredSkill, entry: Listed | None) -> OfferedSkill:
    """One declared skill against the entry the host listed for it (None: not listed)."""
    declared_chars = len(skill.description) if skill.description is not None else None
    record: OfferedSkill = {
        "index": skill.index,
        "name": skill.name,
        "state": "absent",
        "description": None,
        "declaredChars": declared_chars,
    }
    if entry is None:
        return record
    sent = entry.description
    record["description"] = sent
    record["state"] = offered_state(skill.description, sent)
    if record["state"] in ("cut", "altered"):
        record["offeredChars"] = len(sent or "")
    return record


def offered_state(declared: str | None, sent: str | None) -> OfferedState:
    """`intact`, `cut` or `altered`: what the host made of a declared description it listed."""
    want, got = _words(declared or ""), _words(sent or "")
    if want == got:
        return "intact"
    for mark in _CUT_MARKS:
        got = got.removesuffix(mark).rstrip()
    if want.startswith(got) and declared:
        return "cut"
    return "altered"


def _words(text: str) -> str:
    """A description with its whitespace runs as single spaces: hosts re-wrap, never reword."""
    return " ".join(text.split())


def _unobservable(skill: DeclaredSkill, why: str) -> OfferedSkill:
    return {"index": skill.index, "name": skill.name, "state": "unobservable", "reason": why}
