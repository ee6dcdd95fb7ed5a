"""What the views say about the skills a host offered the model (`offered-skills.json`) and
what became of a run's target: a target not offered intact, another skill read instead, a read
the host refused, and a script that reads what the host never offered.

Every place that shows a result says it in these words: the terminal summary and the text view
(a line per variant), the bottom line (`decision.py`), the cross-host table (`hosts.py`) and the
HTML run page (`html_run.py`). Over trials, the aggregate's counts of each state
(`analysis/offered.py`) are said here too: in its bottom line and beside each trigger rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..analysis.offered import KNOWN_INTACT, not_intact
from ..common.wording import counted
from ..evidence import read
from .present import mapping, row

INTACT = "intact"


def offered_text(skill: Mapping[str, Any]) -> str:
    """`intact`, `cut 1024 of 1068`, `not offered` (absent), `altered (…)` or
    `unobservable: why`."""
    state = str(skill.get("state"))
    declared = skill.get("declaredChars")
    if state == "cut":
        return f"cut {skill.get('offeredChars')} of {declared}"
    if state == "altered":
        what = "none declared" if declared is None else f"{declared} declared"
        return f"altered: {skill.get('offeredChars')} characters sent, {what}"
    if state == "unobservable":
        return f"unobservable: {skill.get('reason')}"
    return "not offered" if state == "absent" else state


def offered_skills(variant_dir: Path) -> list[Mapping[str, Any]]:
    """Each declared skill of a variant as the host offered it; [] where none was recorded."""
    record = read.read_offered(variant_dir)
    return [] if record is None else list(record["skills"])


def target_offered(variant_dir: Path, run: Mapping[str, Any]) -> tuple[str, str] | None:
    """A description run's target (its name) and how it was offered; None: no target, or no
    record of what was offered."""
    target = mapping(mapping(run.get("activation")).get("target"))
    if run.get("evaluationType") != "description" or "index" not in target:
        return None
    for skill in offered_skills(variant_dir):
        if skill.get("index") == target["index"]:
            return str(skill.get("name")), offered_text(skill)
    return None


def variant_notes(variant_dir: Path, run: Mapping[str, Any]) -> list[str]:
    """What a reader must know of a variant's activation, one sentence each (none when its
    target was offered intact and nothing else happened)."""
    notes = []
    offered = target_offered(variant_dir, run)
    if offered is not None and offered[1] != INTACT:
        notes.append(f"target {offered[0]}: {offered[1]}")
    activation = mapping(run.get("activation"))
    state = activation.get("state")
    if state == "denied":
        notes.append("activation denied: the host refused a call naming the target")
    others = [mapping(s).get("name") for s in activation.get("otherSkillsRead") or []]
    if state == "read-another-skill" and others:
        notes.append(f"read another skill: {', '.join(str(name) for name in others)}")
    if activation.get("unrealistic"):
        notes.append(f"unrealistic script: {activation['unrealistic']}")
    return notes


def activation_rows(variant_dir: Path, run: Mapping[str, Any]) -> list[str]:
    """The text view's rows of a description run's activation: its state, how its target was
    offered, the other declared skills it read and, under a script, why the script is not what
    a model could have done; none for a run that recorded no state."""
    activation = mapping(run.get("activation"))
    if run.get("evaluationType") != "description" or not activation.get("state"):
        return []
    rows = [row("  activation", str(activation["state"]))]
    offered = target_offered(variant_dir, run)
    if offered is not None:
        rows.append(row("  target-offered", *offered))
    others = [str(mapping(s).get("name")) for s in activation.get("otherSkillsRead") or []]
    rows.append(row("  other-skills-read", ",".join(others) or "none"))
    if activation.get("unrealistic"):
        rows.append(row("  unrealistic-script", str(activation["unrealistic"])))
    return rows


def caveat(group_dir: Path, variants: Iterable[str]) -> str:
    """What the bottom line must add about a group: each variant whose target the host did not
    offer intact, and each script that reads a skill never offered; "" when there is none."""
    parts = []
    for variant in variants:
        found = read.read_run(group_dir / variant)
        if found is None:
            continue
        run = found[1]
        offered = target_offered(group_dir / variant, run)
        if offered is not None and not offered[1].startswith(KNOWN_INTACT):
            text = (
                f"the host did not offer the {variant}'s target {offered[0]} intact ({offered[1]})"
            )
            parts.append(text)
        if mapping(run.get("activation")).get("unrealistic"):
            parts.append(f"the {variant}'s script reads a skill the host never offered")
    return "; but " + "; ".join(parts) if parts else ""


def counts_text(counts: Mapping[str, int], unit: str) -> str:
    """`in 2 of 3 trials (cut 1, not offered 1)` of the states that are not intact; "" when
    every counted run saw the target intact (or could not be seen)."""
    shown = not_intact(counts)
    if not shown:
        return ""
    states = ", ".join(f"{'not offered' if s == 'absent' else s} {n}" for s, n in shown.items())
    return f"in {sum(shown.values())} of {counted(sum(counts.values()), unit)} ({states})"


def aggregate_caveat(group: Mapping[str, Any]) -> str:
    """What an aggregate's bottom line must add about a group: each variant whose target the
    host did not offer intact in some trials; "" when there is none."""
    parts = []
    for target in group.get("offered") or []:
        said = counts_text(mapping(mapping(target).get("trials")), "trial")
        if said:
            variant, name = mapping(target).get("variant"), mapping(target).get("target")
            parts.append(f"the host did not offer the {variant}'s target {name} intact {said}")
    return "; but " + "; ".join(parts) if parts else ""
