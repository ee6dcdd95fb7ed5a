"""The declared skills as the run met them: what the host offered the model of each
(`offered-skills.json`), what its own skill loader warned of them (`skill-warnings.json`), and
what became of the target (`run.json`'s `activation`). Each shape is described here once, as
`records.py` describes the other files (`shapes.py` derives the readers)."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

# How a declared skill reached the model (`offered-skills.json`), and what became of the
# target in a run: read, or why not.
OfferedState = Literal["intact", "cut", "altered", "absent", "unobservable"]
ActivationState = Literal[
    "read", "not-read", "not-offered", "offered-cut", "denied", "read-another-skill"
]


class SkillRef(TypedDict):
    """A declared skill of a variant: its position and its name (front matter, else folder)."""

    index: int
    name: str


class Activation(TypedDict):
    """Whether, and in which turns, the target skill was read, and what else explains it."""

    targetRead: NotRequired[bool | None]
    firstReadTurn: NotRequired[int | None]
    readTurns: NotRequired[list[int]]
    successfulReadPaths: NotRequired[list[str]]
    # Absent before offered skills were recorded: `read`, `not-read`, `not-offered`,
    # `offered-cut`, `denied` or `read-another-skill`.
    state: NotRequired[ActivationState]
    target: NotRequired[SkillRef | None]  # the target skill by name; None: the variant has none
    # The target's state in `offered-skills.json` (`intact`, `cut`, ...); None: no target.
    offered: NotRequired[OfferedState | None]
    otherSkillsRead: NotRequired[list[SkillRef]]  # declared skills read besides the target
    # Why the script is not what a model could have done (it reads a skill never offered).
    unrealistic: NotRequired[str | None]


# offered-skills.json


class OfferedSkill(TypedDict):
    """One declared skill as the host listed it to the model."""

    index: int
    name: str
    state: OfferedState
    description: NotRequired[str | None]  # exactly as sent; None: not listed, or no text
    offeredChars: NotRequired[int]  # a `cut` or `altered` description's length as sent
    declaredChars: NotRequired[int | None]  # the SKILL.md's description; None: it has none
    reason: NotRequired[str]  # why `unobservable`


class OfferedSkillsRecord(TypedDict):
    """`offered-skills.json`: what the host listed to the model in its first model request
    that lists skills, against each declared `SKILL.md`."""

    schema_version: int
    host: str
    skills: list[OfferedSkill]
    # Listed names no declared skill has (the host's own skills).
    others: list[str]
    request: NotRequired[int | None]  # the request read (0-based); None: none listed skills


class SkillWarning(TypedDict):
    """One warning a host's skill loader gave, named by the declared skill it is about."""

    skill: str | None  # the declared path; None: a skill the warning names no path of
    index: int | None  # its index in the variant's `skills`
    type: str  # the host's kind of diagnostic ("warning", "collision", ...)
    message: str  # the host's words


class SkillWarningsRecord(TypedDict):
    """`skill-warnings.json`: what the host's own skill loader warned of the declared skills
    (written for a host that reports it; empty `warnings`: it warned of nothing)."""

    host: str
    warnings: list[SkillWarning]
