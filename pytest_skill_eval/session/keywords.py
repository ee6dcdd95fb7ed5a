"""`-k` at configure: which groups any of their items would match, before they are collected.

The checks a controller makes before anything runs (live credentials, known prices under a
ceiling) and the forecast look at the selected groups; `--skill-eval-group` narrows them, and so
must `-k`. pytest applies `-k` to items after collection, so the same expression is evaluated
here against the names each item of a group will have: its name (`group[variant@host-trialK]`)
and its parents' (the definition file and the directories between it and the rootdir), with
pytest's own matcher (`_pytest.mark`, read from pytest 9.2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from _pytest.mark import KeywordMatcher
from _pytest.mark.expression import Expression

from ..definitions import VARIANTS, LoadedDefinition, LoadedGroup
from ..nodeids import item_name


def keyword_groups(
    expression: str,
    rootpath: Path,
    definitions: Iterable[LoadedDefinition],
    hosts_for: Callable[[LoadedGroup], tuple[str, ...]],
    trials: int,
) -> set[str] | None:
    """The ids of the groups some item of which `-k expression` selects; None: no `-k` (or
    one pytest will refuse at collection, with its own message)."""
    if not expression.strip():
        return None
    try:
        compiled = Expression.compile(expression.strip())
    except SyntaxError:
        return None
    kept: set[str] = set()
    for definition in definitions:
        parents = _parent_names(definition.path, rootpath)
        for loaded in definition.groups:
            group = loaded.group
            names = (
                item_name(group.id, variant, trial, trials, host)
                for host in hosts_for(loaded)
                for variant in VARIANTS
                for trial in range(1, trials + 1)
            )
            if any(compiled.evaluate(KeywordMatcher({*parents, name})) for name in names):
                kept.add(group.id)
    return kept


def _parent_names(path: Path, rootpath: Path) -> set[str]:
    """The names of an item's parents that `-k` matches: the directories below the rootdir
    and the definition file (pytest leaves out the session and the rootdir's own node)."""
    try:
        parts = path.resolve().relative_to(rootpath.resolve()).parts
    except ValueError:
        parts = (path.name,)
    return set(parts)
