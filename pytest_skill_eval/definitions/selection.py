"""Selecting groups and variants of a loaded definition (reference §2.6)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import SelectionError
from .fields import VARIANTS
from .loader import LoadedDefinition, LoadedGroup

_POSITION = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class SelectedGroup:
    """A group chosen for execution and which of its variants run."""

    loaded: LoadedGroup
    variants: dict[str, bool]  # {"baseline": selected?, "candidate": selected?}


def select(
    definition: LoadedDefinition, group: str | None, variant: str | None
) -> list[SelectedGroup]:
    """Apply the group selector (id or one-based suite position) and the variant selector."""
    if variant is not None and variant not in VARIANTS:
        raise SelectionError(f"variant selector must be baseline or candidate, not {variant!r}")
    chosen = list(definition.groups)
    if group is not None:
        chosen = [_group(definition, group)]
    selected: dict[str, bool] = {name: variant is None or name == variant for name in VARIANTS}
    return [SelectedGroup(loaded, dict(selected)) for loaded in chosen]


def _group(definition: LoadedDefinition, selector: str) -> LoadedGroup:
    if definition.kind != "suite":
        raise SelectionError(
            f"a group selector ({selector!r}) only applies to a suite; {definition.path} is a "
            "single group definition, so drop the selector"
        )
    count = len(definition.groups)
    if _POSITION.fullmatch(selector):
        position = int(selector)
        if 1 <= position <= count:
            return definition.groups[position - 1]
        raise SelectionError(
            f"unknown group selector {selector!r}: suite {definition.id!r} has {count} "
            f"group{'s' if count != 1 else ''} (positions 1..{count})"
        )
    for loaded in definition.groups:
        if loaded.group.id == selector:
            return loaded
    known = ", ".join(loaded.group.id for loaded in definition.groups)
    raise SelectionError(
        f"unknown group selector {selector!r}: suite {definition.id!r} has groups {known} "
        f"(select by id or by position 1..{count})"
    )
