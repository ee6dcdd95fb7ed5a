"""xdist scheduling that keeps a group's variants of one trial together and in order."""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

from .items import VARIANT_ITEM


def scope_of(nodeid: str) -> str:
    """`file::group[variant-trialK]` → `file::group-trialK`; any other item is its own scope."""
    match = VARIANT_ITEM.match(nodeid)
    if match is None:
        return nodeid
    return match["group"] + (match["trial"] or "")


class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """LoadScope with one work unit per group and trial: baseline then candidate on one worker.

    Different groups and trials spread over the workers. This replaces `--dist loadgroup`,
    whose node-id suffix has no effect on pytest 9.2's structured node ids.
    """

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)
