"""Merging 1,000 groups × 2 variants from 4 shards of synthetic evidence (bar: under 10 s;
`--groups 10000`: under 30 s). The merge's own CPU is printed beside its wall time.

The evidence is written with the evidence package's own writers (write-once files, manifests)
but no subject runs: the benchmark measures the merge (shard roots, verify, copy, summary),
not Pi.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import emit
from pytest_skill_eval.evidence import layout, sha256_file, write_json_once, write_manifest
from pytest_skill_eval.evidence.store import new_result_id, utc_now
from pytest_skill_eval.scale.merge import merge
from pytest_skill_eval.scale.models import PlanModel
from pytest_skill_eval.scale.plan import Plan
from pytest_skill_eval.scale.shard import seal_shard
from tests.support.roots import VARIANTS, body_group

GROUPS = 1000
SHARDS = 4


def _plan(path: Path, count: int) -> Plan:
    result_id = new_result_id()
    groups = {}
    for index in range(count):
        group_id = f"g{index:04d}"
        groups[group_id] = {
            "path": f"groups/{group_id}.json",
            "position": index + 1,
            "sha256": "0" * 64,
            "resources": "0" * 64,
            "definition": body_group(group_id),
        }
    data: dict[str, Any] = {
        "schema_version": 1,
        "kind": "plan",
        "id": new_result_id(),
        "root": str(path.parent),
        "definitions": [{"path": "suite.json", "kind": "suite", "id": "bench", "groups": []}],
        "groups": groups,
        "selection": {"group": None, "variant": None, "trials": 1},
        "pins": {},
        "provider": {"cassettes": None, "record": "none", "mode": "replay"},
        "failOn": "infrastructure",
        "maxCost": None,
        "results": [{"trial": 1, "id": result_id}],
        "aggregate": None,
        "units": [
            {"group": g, "trial": 1, "position": e["position"], "variants": list(VARIANTS)}
            for g, e in groups.items()
        ],
        "createdAt": utc_now(),
    }
    write_json_once(path, data)
    return Plan(path, PlanModel.model_validate(data), sha256_file(path))


def _group(group_dir: Path, group_id: str, position: int) -> None:
    write_json_once(group_dir / layout.DEFINITION, body_group(group_id))
    for variant in VARIANTS:
        run = {"schema_version": 1, "variant": variant, "state": "complete", "turns": []}
        write_json_once(group_dir / variant / layout.RUN, run)
        write_json_once(group_dir / variant / layout.TRANSCRIPT, [{"role": "assistant"}] * 20)
        (group_dir / variant / "workspace").mkdir()
        (group_dir / variant / "workspace" / "answer.txt").write_text(variant)
    check = {"id": "says", "variant": "candidate", "kind": "file-text", "state": "pass"}
    grade = {"schema_version": 1, "state": "complete", "checks": [check], "comparisons": []}
    write_json_once(group_dir / layout.GRADE, grade)
    record = {
        "id": group_id,
        "position": position,
        "trial": 1,
        "state": "complete",
        "variants": dict.fromkeys(VARIANTS, "complete"),
        "grade": "complete",
        "artifacts": {"grade": layout.GRADE, "group": layout.GROUP},
        "errors": [],
        "completedAt": utc_now(),
    }
    write_json_once(group_dir / layout.GROUP, record)
    write_manifest(group_dir)


def main(groups: int = GROUPS) -> dict[str, object]:
    """Build the shards of `groups` groups, then time one merge of them."""
    with tempfile.TemporaryDirectory(prefix="bench-merge-") as scratch:
        base = Path(scratch)
        plan = _plan(base / "plan.json", groups)
        units = plan.units()
        for k in range(1, SHARDS + 1):
            shard = layout.shard_dir(base / "runs", plan.id, k, SHARDS, new_result_id())
            result = shard / plan.result_id(1)
            for unit in units[k - 1 :: SHARDS]:
                _group(layout.group_dir(result, unit.group), unit.group, unit.position)
            record = {
                "schema_version": 1,
                "kind": "shard",
                "plan": plan.id,
                "planSha256": plan.sha256,
                "shard": {"index": k, "count": SHARDS},
                "host": "bench",
                "results": {"1": plan.result_id(1)},
                "units": [],
                "budget": None,
                "ledger": None,
                "startedAt": utc_now(),
                "completedAt": utc_now(),
            }
            write_json_once(layout.shard_file(shard), record)
            seal_shard(shard, plan)
        start, cpu = time.perf_counter(), time.process_time()
        outcome = merge(plan, [base / "runs"], base / "merged")
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        assert not outcome.missing, outcome.missing
    return emit(
        "merge",
        groups=groups,
        variants=2,
        shards=SHARDS,
        seconds=round(seconds, 3),
        cpu_s=round(cpu, 3),
        bar_s=10.0 if groups <= GROUPS else 30.0,
    )


if __name__ == "__main__":
    main()
