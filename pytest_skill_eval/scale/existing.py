"""Whether results already under `-o` are the ones a merge of these shards writes.

A merge never rewrites a result; merging the same shards again finds them there. It says
"already merged" (and prints their seal) only when it can prove that: each result verifies
against its manifests, its seal and the shard roots it records; its seal records these very
shards, roots, leaves and bound or not; its `invocation.json` and `summary.json` are the bytes
this merge writes; its groups are the plan's, each arrived one with the manifest its shard's
root covers; and the aggregate is the one these trials give. Anything else is other evidence.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analysis.trials import aggregate
from ..errors import EvidenceError
from ..evidence import json_bytes, layout, read_json, verify_result
from ..evidence.shard_seal import verify_shard_chain
from ..evidence.store import sha256_file
from ..evidence.summary import summary_record
from .intake import ShardGroup, real_dir
from .plan import Plan, invocation_record

_ADVISORY = (layout.REVIEW, layout.SEMANTIC_GRADE)  # replaceable, never in a manifest


def differs(
    plan: Plan,
    targets: Sequence[Path],
    aggregate_target: Path | None,
    arrived: Mapping[tuple[str, int], ShardGroup],
    shards: Sequence[Mapping[str, Any]],
    times: tuple[str, str],
    budget: Mapping[str, Any] | None,
) -> str | None:
    """Why the existing results are not what this merge writes; None when they are.

    `shards` is what the merged seals record, `times` the merge's (started, completed).
    """
    started, completed = times
    try:
        for trial, target in enumerate(targets, start=1):
            reason = _result_differs(plan, trial, target, arrived, shards, started)
            if reason is not None:
                return reason
            summary = summary_record(target, trial, budget, completed)
            if _bytes(layout.summary_file(target)) != json_bytes(summary):
                return f"{layout.summary_file(target)} is not the summary of its groups"
        if aggregate_target is not None:
            record = aggregate(aggregate_target.name, targets, plan.trials, budget)
            record["completedAt"] = completed
            path = layout.aggregate_file(aggregate_target)
            if _bytes(path) != json_bytes(record):
                return f"{path} is not the aggregate of these trials"
    except (EvidenceError, OSError, ValueError) as error:
        return str(error)
    return None


def _result_differs(
    plan: Plan,
    trial: int,
    target: Path,
    arrived: Mapping[tuple[str, int], ShardGroup],
    shards: Sequence[Mapping[str, Any]],
    started: str,
) -> str | None:
    if not real_dir(target):
        return f"{target} is not a result directory"
    problems = [*verify_result(target, _ADVISORY), *verify_shard_chain(target)]
    if problems:
        return f"{target} does not verify ({problems[0]})"
    recorded = read_json(layout.seal_file(target)).get("shards")
    if recorded != json.loads(json.dumps(list(shards))):
        return f"{layout.seal_file(target)} records other shards, roots or bindings"
    expected = json_bytes(invocation_record(plan, trial, started_at=started))
    if _bytes(layout.invocation_file(target)) != expected:
        return f"{layout.invocation_file(target)} is not the plan's invocation"
    groups = layout.groups_dir(target)
    planned = {name for u in plan.units() if u.trial == trial for _host, name in u.directories}
    names = set(os.listdir(groups))
    if names != planned or not all(real_dir(groups / name) for name in names):
        return f"{groups} does not hold exactly the plan's groups"
    for (name, unit_trial), group in arrived.items():
        if unit_trial == trial and sha256_file(groups / name / layout.MANIFEST) != group.manifest:
            return f"{groups / name} is not the group its shard sealed"
    return None


def _bytes(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() and not path.is_symlink() else None
