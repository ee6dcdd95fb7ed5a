"""What a host does with a declared skill, declared in its registration (`hosts/<name>/
registration.py`) and read by the skill linter (`definitions/skill_lint.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SkillLimits:
    """What one host does with a declared skill, as declared facts of its pinned version."""

    # Characters of one listing entry the model is offered; a longer one is cut to it.
    description_cut: int | None = None
    # Characters of a description past which the host drops the skill (never lists it).
    description_drop: int | None = None
    # Front matter fields appended to the description in the listing entry (Claude Code's
    # `when_to_use`, joined by " - "), counted against `description_cut` and `catalog_cut`.
    listing_fields: tuple[str, ...] = ()
    # Characters of the whole listing (every `- name: description` entry, one a line) before
    # the host shortens descriptions.
    catalog_cut: int | None = None
    # How the catalog limit is known (shown with a catalog warning).
    catalog_basis: str = ""
    # Names the host keeps for itself → why a declared skill of that name cannot run there.
    reserved: Mapping[str, str] = field(default_factory=dict)
    # The host links each skill into its skills directory by name (a name that is not one
    # directory entry cannot be installed); else it is given the skill's path.
    linked_by_name: bool = True
    # The host lists a SKILL.md without front matter (under its folder's name, with text of its
    # own as the description); else it drops it, so the model is never offered it.
    lists_without_front_matter: bool = False
