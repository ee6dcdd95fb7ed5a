"""What the terminal says of a variant's retries and of groups a resumed result carried over."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..common.wording import counted
from ..evidence import layout, read
from ..evidence.iteration import attempts_of, carried_groups


def resumed_line(result_dir: Path) -> str | None:
    """`  resumed from <id> (seal …): N groups carried over`, for a resumed result."""
    invocation = read.load_invocation(result_dir)
    resumed = invocation.get("resumedFrom") if invocation is not None else None
    if not isinstance(resumed, Mapping):
        return None
    root = resumed.get("root")
    seal = f"seal sha256:{root}" if root else "never sealed"
    carried = len(carried_groups(invocation))
    return (
        f"  resumed from {resumed.get('id')} ({seal}): {counted(carried, 'group')} carried over "
        "byte for byte, the rest run here"
    )


def group_lines(result_dir: Path, record: Mapping[str, Any]) -> list[str]:
    """A group's attempts per retried variant, and where a carried-over group came from."""
    group_dir = layout.record_dir(result_dir, record)
    lines = []
    for variant in record.get("variants", {}):
        found = read.read_run(group_dir / variant)
        attempts = attempts_of(found[1]) if found is not None else 1
        if attempts > 1:
            lines.append(
                f"    {variant}: {attempts} attempts (the earlier ones kept in "
                f"{group_dir / variant / layout.ATTEMPTS})"
            )
    source = carried_groups(read.load_invocation(result_dir)).get(group_dir.name)
    if source is not None:
        lines.append(f"    carried over from {source}: not run again")
    return lines
