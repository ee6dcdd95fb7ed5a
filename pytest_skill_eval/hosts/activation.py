"""What became of a variant's target skill, beyond read or not read: the skills the host offered
the model (`offered-skills.json`, written here), the other declared skills the run read, a read
the host refused, and a script that reads what no model was offered.

The state (`skill_records.ActivationState`), first that holds:
`read` (the target's SKILL.md was read), `denied` (a call naming the target ended in an error,
the host's refusal), `read-another-skill` (another declared skill's SKILL.md was read),
`not-offered` (the host never listed the target), `offered-cut` (it listed the target's
description cut), `not-read`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..evidence.skill_records import (
    Activation,
    ActivationState,
    OfferedSkill,
    OfferedSkillsRecord,
    SkillRef,
)
from ..workspace.materialise import PreparedVariant
from .base import Declared
from .offered import CatalogReader, declared_skill, offered_record
from .registration import load

# Endpoint modes where a script, not a model, decides each tool call.
_SCRIPTED = ("scripted",)


def offered_skills(
    registration: Declared,
    prepared: PreparedVariant,
    requests: Sequence[Mapping[str, Any]] | None,
) -> OfferedSkillsRecord:
    """The variant's declared skills against what the host listed in its model requests."""
    read: CatalogReader = load(registration.offered)
    declared = [
        declared_skill(i, snapshot.path, snapshot.source_path)
        for i, snapshot in enumerate(prepared.skills)
    ]
    bodies = None if requests is None else [_body(request) for request in requests]
    return offered_record(registration.name, declared, bodies, read)


def _body(request: Mapping[str, Any]) -> Mapping[str, Any]:
    body = request.get("body")
    return body if isinstance(body, Mapping) else {}


def target_index(prepared: PreparedVariant) -> int | None:
    """The position of the variant's target among its skills (None: it has none)."""
    if prepared.target_path is None:
        return None
    for index, snapshot in enumerate(prepared.skills):
        if (snapshot.path / "SKILL.md").resolve() == prepared.target_path:
            return index
    return None


def activation_facts(
    activation: Activation,
    skills: Sequence[Path],
    target: int | None,
    offered: OfferedSkillsRecord | None,
    tool_activity: Sequence[Mapping[str, Any]],
    how: tuple[str, str],
) -> Activation:
    """`activation` with its state, the target's offered state, the other skills read and,
    under a script, why the script reads what the host never offered. `skills` are the
    variant's snapshots, `target` the target's position among them; `how` is the endpoint's
    mode and the host's display name."""
    listed: dict[int, OfferedSkill] = {s["index"]: s for s in offered["skills"]} if offered else {}
    reads = set(activation.get("successfulReadPaths") or [])
    read = [i for i, path in enumerate(skills) if str(_skill_file(path)) in reads]
    names = {i: listed[i]["name"] if i in listed else path.name for i, path in enumerate(skills)}
    others: list[SkillRef] = [{"index": i, "name": names[i]} for i in read if i != target]
    target_state = listed[target]["state"] if target in listed else None
    denied = target is not None and _denied(tool_activity, skills[target], names[target])
    state = _state(bool(activation.get("targetRead")), denied, bool(others), target_state)
    never = [names[i] for i in read if i in listed and listed[i]["state"] == "absent"]
    mode, host = how
    unrealistic = None
    if never and mode in _SCRIPTED:
        unrealistic = (
            f"the script reads the SKILL.md of {', '.join(never)}, which {host} never offered "
            "the model: no model could have chosen it from the skills it was shown"
        )
    return {
        **activation,
        "state": state,
        "target": None if target is None else {"index": target, "name": names[target]},
        "offered": target_state,
        "otherSkillsRead": others,
        "unrealistic": unrealistic,
    }


def _state(target_read: bool, denied: bool, others: bool, offered: str | None) -> ActivationState:
    if target_read:
        return "read"
    if denied:
        return "denied"
    if others:
        return "read-another-skill"
    if offered == "absent":
        return "not-offered"
    return "offered-cut" if offered == "cut" else "not-read"


def _denied(activity: Sequence[Mapping[str, Any]], skill: Path, name: str) -> bool:
    """Whether a tool call naming the target (its folder, or its name as a whole argument)
    ended in an error: the host refused the activation or the read."""
    folder = str(skill.resolve())
    for call in activity:
        if call.get("isError") is not True:
            continue
        args = call.get("args")
        text = json.dumps(args, ensure_ascii=False) if args is not None else ""
        values = args.values() if isinstance(args, Mapping) else ()
        if folder in text or name in values:
            return True
    return False


def _skill_file(snapshot: Path) -> Path:
    return (snapshot / "SKILL.md").resolve()
