"""What a result says about how it was iterated: a run's attempts (`--skill-eval-retries`) and
the groups a resumed result carried over (`--skill-eval-resume`). Pure readers of records, for
the run and the views alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# invocation.json's field naming the result a resume completed and the groups it carried.
RESUMED_FROM = "resumedFrom"


def attempts_of(run: Mapping[str, Any]) -> int:
    """How many attempts a run record stands for: itself and each earlier attempt it lists."""
    earlier = run.get("attempts")
    return 1 + (len(earlier) if isinstance(earlier, list) else 0)


def carried_groups(invocation: Mapping[str, Any] | None) -> dict[str, str]:
    """Group directory name → the id of the result it was carried over from."""
    resumed = invocation.get(RESUMED_FROM) if isinstance(invocation, Mapping) else None
    if not isinstance(resumed, Mapping):
        return {}
    groups = resumed.get("groups")
    return {
        str(g.get("group")): str(resumed.get("id"))
        for g in (groups if isinstance(groups, list) else [])
        if isinstance(g, Mapping)
    }
