"""The declared skills checked before anything is spent: the Agent Skills specification and
each host's own rules.

A host declares what it does with a skill's front matter as `SkillLimits` (its registration,
`hosts/<name>/registration.py`); this module reads them, and only it. A finding is one of:

- `error`: no host can run the skill (unparseable front matter, no description, two skills of
  one variant with one name): a collection error naming the file;
- `refused`: that host would refuse or drop the skill (a name it keeps; no front matter on a
  host that lists only skills with it): the group's items on it are a `cannot run on <host>`
  skip;
- `cut`: that host would offer the model less than the skill says (a description or catalog
  cut): a warning showing the cut;
- `spec`: the skill breaks the specification in a way hosts tolerate: a warning.

`skill-eval lint` prints every finding; collection turns them into errors, skips and warnings.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import yaml

from ..common.skill_limits import SkillLimits

__all__ = ["Finding", "SkillFile", "SkillHost", "SkillLimits", "lint_variant", "parse_skill"]

NAME_LIMIT = 64
DESCRIPTION_LIMIT = 1024
COMPATIBILITY_LIMIT = 500
# The specification's fields, and the extensions Claude Code reads that a linter must allow.
SPEC_FIELDS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)
EXTENSION_FIELDS = frozenset(
    {
        "agent",
        "argument-hint",
        "arguments",
        "context",
        "disable-model-invocation",
        "disallowed-tools",
        "effort",
        "hooks",
        "model",
        "paths",
        "shell",
        "user-invocable",
        "when_to_use",
    }
)
# A name that is not one directory entry cannot be linked into a host's skills directory.
UNLINKABLE = ("", ".", "..")

Level = Literal["error", "refused", "cut", "spec"]
NO_FRONT_MATTER = "SKILL.md has no front matter (a first line ---)"
FRONT_FIX = "start SKILL.md with front matter: ---, name: …, description: …, ---"


class SkillHost(Protocol):
    """What the linter reads of a host (its registration, `hosts/registration.py`)."""

    @property
    def name(self) -> str: ...
    @property
    def skill_limits(self) -> SkillLimits: ...


@dataclass(frozen=True)
class Finding:
    """One thing a declared skill would do wrong; `host` is set for a host's own rule."""

    level: Level
    skill: str  # the declared path (or the path given to `skill-eval lint`)
    message: str
    fix: str
    host: str | None = None

    def line(self, where: str) -> str:
        """`<where>: <message>; <fix>`, the host named when the rule is its own."""
        on = f"on {self.host}: " if self.host is not None else ""
        return f"{where}: {on}{self.message}; {self.fix}"


@dataclass(frozen=True)
class SkillFile:
    """A skill's SKILL.md as a host reads it: its front matter, or why there is none."""

    skill: str  # the declared path
    folder: str  # the name of the directory that holds SKILL.md
    front: Mapping[str, Any] | None
    problem: str | None = None  # why `front` is None

    @property
    def name(self) -> str:
        """The name a host lists it under: its front matter `name`, else its folder's."""
        declared = (self.front or {}).get("name")
        return declared.strip() if isinstance(declared, str) and declared.strip() else self.folder

    def entry(self, limits: SkillLimits) -> str:
        """Its listing entry's description on a host with `limits`."""
        front = self.front or {}
        parts = [front.get("description"), *(front.get(f) for f in limits.listing_fields)]
        return " - ".join(str(p) for p in parts if isinstance(p, str) and p)


def folder_name(declared: str) -> str:
    """The name of the directory a declared skill path names (`skills/x/` → `x`)."""
    name = posixpath.basename(posixpath.normpath(declared.replace("\\", "/")))
    return "" if name in (".", "..", "/") else name


def parse_skill(skill: str, text: bytes | None, folder: str | None = None) -> SkillFile:
    """`text` (a SKILL.md's bytes; None: unreadable) read as the hosts read its front matter."""
    where = folder if folder is not None else folder_name(skill)
    if text is None:
        return SkillFile(skill, where, None, "SKILL.md cannot be read")
    try:
        lines = text.decode("utf-8").removeprefix("\ufeff").splitlines()
    except UnicodeDecodeError:
        return SkillFile(skill, where, None, "SKILL.md is not UTF-8 text")
    if not lines or lines[0].strip() != "---":
        return SkillFile(skill, where, None, NO_FRONT_MATTER)
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        return SkillFile(skill, where, None, "SKILL.md's front matter has no closing ---")
    try:
        front = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" (line {mark.line + 2})" if mark is not None else ""
        return SkillFile(skill, where, None, f"SKILL.md's front matter is not valid YAML{at}")
    if not isinstance(front, dict):
        return SkillFile(skill, where, None, "SKILL.md's front matter is not a YAML mapping")
    return SkillFile(skill, where, {str(k): v for k, v in front.items()})


def lint_variant(skills: Sequence[SkillFile], hosts: Iterable[SkillHost]) -> list[Finding]:
    """Every finding of one variant's declared skills on `hosts`: each skill against the
    specification, the names against each other, then each host's own rules."""
    findings = [f for skill in skills for f in spec_findings(skill)]
    readable = [s for s in skills if s.front is not None]
    seen: dict[str, str] = {}
    for skill in readable:
        if skill.name in seen:
            findings.append(
                Finding(
                    "error",
                    skill.skill,
                    f"skill name {skill.name!r} is also the name of {seen[skill.name]}: a host "
                    "refuses the second or silently drops one",
                    "give each skill of a variant its own name",
                )
            )
        seen.setdefault(skill.name, skill.skill)
    unlisted = [s for s in skills if s.problem == NO_FRONT_MATTER]
    for host in hosts:
        findings += host_findings([*readable, *unlisted], host)
    return findings


def spec_findings(skill: SkillFile) -> list[Finding]:
    """What breaks the Agent Skills specification in one skill's front matter."""
    if skill.front is None:
        if skill.problem == NO_FRONT_MATTER:  # each host's own rule (`host_findings`)
            return [
                Finding(
                    "spec", skill.skill, f"{skill.problem}: the specification wants it", FRONT_FIX
                )
            ]
        return [Finding("error", skill.skill, f"{skill.problem}: no host lists it", FRONT_FIX)]
    front = skill.front
    found: list[Finding] = []

    def spec(message: str, fix: str) -> None:
        found.append(Finding("spec", skill.skill, message, fix))

    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        fix = "say in `description` what the skill does and when to use it"
        found.append(Finding("error", skill.skill, "`description` is missing: hosts drop it", fix))
    elif len(description) > DESCRIPTION_LIMIT:
        spec(
            f"`description` is {len(description)} characters, over the specification's "
            f"{DESCRIPTION_LIMIT}",
            f"shorten it to {DESCRIPTION_LIMIT} or fewer",
        )
    name = front.get("name")
    if name is not None and not isinstance(name, str):
        spec("`name` is not text", f"write it as `name: {skill.folder}`")
    elif name is None or not name.strip():
        spec("`name` is missing", f"add `name: {skill.folder}`")
    else:
        found += [Finding("spec", skill.skill, m, f) for m, f in _name_problems(name, skill)]
    compatibility = front.get("compatibility")
    if compatibility is not None and not (
        isinstance(compatibility, str) and 1 <= len(compatibility) <= COMPATIBILITY_LIMIT
    ):
        spec(
            f"`compatibility` must be 1–{COMPATIBILITY_LIMIT} characters of text",
            "shorten it, or drop it",
        )
    unknown = sorted(set(front) - SPEC_FIELDS - EXTENSION_FIELDS)
    if unknown:
        spec(
            f"unexpected front matter field(s) {', '.join(unknown)}",
            "move them under `metadata`, or drop them",
        )
    return found


def _is_spec_name(name: str) -> bool:
    """Lowercase letters (of any script), digits and single hyphens, neither first nor last."""
    characters = name == name.lower() and all(c == "-" or c.isalnum() for c in name)
    return characters and not name.startswith("-") and not name.endswith("-") and "--" not in name


def _name_problems(name: str, skill: SkillFile) -> list[tuple[str, str]]:
    """(message, fix) for each rule of the specification `name` breaks."""
    problems = []
    normal = unicodedata.normalize("NFKC", name)
    if len(normal) > NAME_LIMIT:
        problems.append((f"`name` is {len(normal)} characters, over {NAME_LIMIT}", "shorten it"))
    if not _is_spec_name(normal):
        problems.append(
            (
                f"`name` {name!r} is not lowercase letters, digits and single hyphens",
                "use e.g. `my-skill`",
            )
        )
    if skill.folder and normal != skill.folder:
        problems.append(
            (
                f"`name` {name!r} does not match its folder {skill.folder!r}",
                "rename the folder or the skill so they match",
            )
        )
    return problems


def _shown(text: str, limit: int = 160) -> str:
    """`text` quoted, its middle left out past `limit` characters."""
    if len(text) <= limit:
        return repr(text)
    half = limit // 2
    return f"{text[:half]!r} … {text[-half:]!r} ({len(text)} characters)"


def host_findings(skills: Sequence[SkillFile], host: SkillHost) -> list[Finding]:
    """What `host` would refuse or cut of one variant's readable skills."""
    limits = host.skill_limits
    found = [_front_matter_finding(s, host) for s in skills if s.front is None]
    skills = [s for s in skills if s.front is not None]
    for skill in skills:
        why = limits.reserved.get(skill.name)
        if (
            why is None
            and limits.linked_by_name
            and (skill.name in UNLINKABLE or "/" in skill.name)
        ):
            why = "it links each skill into its skills directory by name, and this name is not "
            why += "one directory entry"
        if why is not None:
            message = f"it cannot install a skill named {skill.name!r}: {why}"
            fix = "rename the skill, or run it on another host"
            found.append(Finding("refused", skill.skill, message, fix, host.name))
        found += _dropped(skill, host)
    cut = limits.description_cut
    entries = [(s, s.entry(limits)) for s in skills]
    for skill, entry in entries:
        if cut is not None and len(entry) > cut:
            found.append(
                Finding(
                    "cut",
                    skill.skill,
                    f"its listing offers the model {cut} of the description's {len(entry)} "
                    f"characters, ending {entry[cut - 40 : cut]!r}; the rest "
                    f"({_shown(entry[cut:])}) is cut",
                    f"shorten the description to {cut} characters",
                    host.name,
                )
            )
    # Each entry as a listing shows it: `- name: description`, one a line.
    total = sum(len(f"- {s.name}: {e[:cut]}\n") for s, e in entries)
    if limits.catalog_cut is not None and total > limits.catalog_cut:
        found.append(
            Finding(
                "cut",
                ", ".join(s.skill for s in skills),
                f"the variant's {len(skills)} listing entries total {total} characters, over "
                f"the {limits.catalog_cut} its listing holds ({limits.catalog_basis}): it "
                "shortens descriptions to fit",
                "declare fewer skills or shorter descriptions",
                host.name,
            )
        )
    return found


def _front_matter_finding(skill: SkillFile, host: SkillHost) -> Finding:
    """What `host` does with a SKILL.md without front matter: drops it, or lists it with a
    description of its own (the model never sees one the author wrote)."""
    if host.skill_limits.lists_without_front_matter:
        message = (
            "it lists a SKILL.md without front matter under its folder's name, with a "
            "description of its own: the model is offered none the skill declares"
        )
        return Finding("cut", skill.skill, message, FRONT_FIX, host.name)
    message = f"{skill.problem}: it does not list the skill, so the model is never offered it"
    return Finding("refused", skill.skill, message, FRONT_FIX, host.name)


def _dropped(skill: SkillFile, host: SkillHost) -> list[Finding]:
    """`host` drops a skill whose description is longer than it lists at all."""
    drop = host.skill_limits.description_drop
    description = (skill.front or {}).get("description")
    if drop is None or not isinstance(description, str) or len(description) <= drop:
        return []
    message = (
        f"its description is {len(description)} characters, and it drops a skill whose "
        f"description is over {drop}: the model is never offered it"
    )
    return [
        Finding("refused", skill.skill, message, f"shorten the description to {drop}", host.name)
    ]
