"""Selecting groups and variants of a loaded definition (reference §2.6)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..common.wording import counted
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
    definition: LoadedDefinition, group: str | Sequence[str] | None, variant: str | None
) -> list[SelectedGroup]:
    """Apply the group selectors (ids or one-based suite positions, one or several) and the
    variant selector; the chosen groups keep the suite's order, each once."""
    if variant is not None and variant not in VARIANTS:
        raise SelectionError(f"variant selector must be baseline or candidate, not {variant!r}")
    selectors = (group,) if isinstance(group, str) else tuple(group or ())
    chosen = list(definition.groups)
    if selectors:
        picked = {id(_group(definition, selector)) for selector in selectors}
        chosen = [loaded for loaded in definition.groups if id(loaded) in picked]
    selected: dict[str, bool] = {name: variant is None or name == variant for name in VARIANTS}
    return [SelectedGroup(loaded, dict(selected)) for loaded in chosen]


def selected_groups(
    definitions: Iterable[LoadedDefinition], selectors: Sequence[str]
) -> Iterator[LoadedGroup]:
    """The groups `selectors` pick from each definition, in suite order; a definition whose
    selectors match nothing contributes none (that is reported as a collection error)."""
    for definition in definitions:
        try:
            selection = select(definition, selectors, None)
        except SelectionError:
            continue
        for chosen in selection:
            yield chosen.loaded


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
            f"unknown group selector {selector!r}: suite {definition.id!r} has "
            f"{counted(count, 'group')}; use a position 1..{count} or a group id"
        )
    for loaded in definition.groups:
        if loaded.group.id == selector:
            return loaded
    ids = [loaded.group.id for loaded in definition.groups]
    close = difflib.get_close_matches(selector, ids, n=1)
    fix = f"did you mean {close[0]!r}?" if close else f"use one of its ids or a position 1..{count}"
    raise SelectionError(
        f"unknown group selector {selector!r}: suite {definition.id!r} has groups "
        f"{', '.join(ids)}; {fix}"
    )


def recorded_selectors(selectors: Sequence[str]) -> str | list[str] | None:
    """How evidence records the group selection: none, one selector, or several in order."""
    if not selectors:
        return None
    return selectors[0] if len(selectors) == 1 else list(selectors)
