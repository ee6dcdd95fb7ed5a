"""What a result says about how it was iterated: a run's attempts (`--skill-eval-retries`), the
groups a resumed result carried over (`--skill-eval-resume`) and those unchanged since an earlier
result (`--skill-eval-affected-since`). Readers of records, for the run, the analysis and the
views."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import read
from .layout import DEFAULT_HOST

# invocation.json's field naming the result a resume completed and the groups it carried.
RESUMED_FROM = "resumedFrom"
# invocation.json's field naming the earlier result and the groups unchanged since it.
AFFECTED_SINCE = "affectedSince"
# How a run's `notReused` says its reuse was refused while it was being copied (it ran instead).
REFUSED_COPY = "not reused: refused to copy"


def attempts_of(run: Mapping[str, Any]) -> int:
    """How many attempts a run record stands for: itself and each earlier attempt it lists."""
    earlier = run.get("attempts")
    return 1 + (len(earlier) if isinstance(earlier, list) else 0)


def group_attempts(group_dir: Path, variants: Sequence[str]) -> dict[str, int]:
    """Attempts per variant of a group directory, from its run records (1 when never retried)."""
    counted: dict[str, int] = {}
    for variant in variants:
        found = read.read_run(group_dir / variant)
        counted[variant] = attempts_of(found[1]) if found is not None else 0
    return counted


def retries_in(group_dir: Path, record: Mapping[str, Any]) -> int:
    """Attempts beyond the first, summed over a group's variants (0: nothing was retried)."""
    variants = list(record.get("variants") or {})
    return sum(max(0, n - 1) for n in group_attempts(group_dir, variants).values())


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


def unchanged_groups(invocation: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The groups `--skill-eval-affected-since` left unrun, each as the earlier result holds
    it: `group`, `host`, `result`, its seal `root`, the group's `manifest` hash and `grade`."""
    since = invocation.get(AFFECTED_SINCE) if isinstance(invocation, Mapping) else None
    found = since.get("unchanged") if isinstance(since, Mapping) else None
    return [g for g in (found if isinstance(found, list) else []) if isinstance(g, Mapping)]


def unchanged_line(reference: Mapping[str, Any]) -> str:
    """`<group>[@host]: unchanged, grade <g> in <result> (seal …, manifest …)`: a sealed
    reference to the earlier grade, not a copy of it."""
    host = reference.get("host")
    name = (
        f"{reference.get('group')}@{host}"
        if host and host != DEFAULT_HOST
        else reference.get("group")
    )
    return (
        f"{name}: unchanged, grade {reference.get('grade')} in {reference.get('result')} "
        f"(seal {reference.get('root')}, manifest {reference.get('manifest')})"
    )
