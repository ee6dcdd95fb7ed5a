"""`skill-eval merge`: join the shards of a plan into the result(s) one machine would have written.

Every arrived group is copied (never hard-linked, so a shard changed later cannot reach the
sealed result) and proved against its manifest by the bytes it wrote, hashed as they pass.
Only regular files are copied, and the links a subject left in its workspace (as links): a
FIFO, socket or device left there, which its manifest records by kind, is refused, named on
the output and in the merged seal (`refused`, beside the shard roots), and never placed in
the result. Every planned unit must arrive exactly once; a unit no shard delivered is
recorded `infrastructure-failed` (`shard-missing`), never `cancelled`. Then `invocation.json`,
`summary.json` and, for several trials, the aggregate are written with the same writers a
single-machine run uses. The merge is staged beside the
target and moved into place at the end, so it is all or nothing; re-running it on the same
shards finds the result already there and leaves it as it is, once `existing` has proven it is
the one this merge writes (else it is other evidence, refused). Every timestamp a merge writes
comes from the shards' records (the earliest start, the latest completion), never the clock,
so merging the same shards twice gives the same bytes.

Each shard's root is recomputed from what the merge reads (`intake`): with `--shard-root` it
must be the root the shard's log printed, else the one its own seal records; the merged seal
records every shard's root and whether it was bound. No symlink in a shard is followed, and
every write is checked to land inside `-o`.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.trials import aggregate
from ..definitions import LoadedGroup, parse_group
from ..evidence import layout, verify_group, write_json_once
from ..evidence.copy import CopyError, copy_group_tree
from ..evidence.store import sha256_file
from ..evidence.summary import write_invocation, write_summary
from ..hosts.process import CancelToken
from ..hosts.registry import registered
from ..run import Environment, GroupRun
from ..workspace import SourceResolver
from .balance import assign
from .existing import differs
from .intake import MergeError, Shard, ShardGroup, choose_shards, find_shards, load_shard
from .plan import Plan, Unit, invocation_record
from .refused import Refused, refusals

SHARD_MISSING = "shard-missing"


@dataclass
class MergeOutcome:
    """What a merge wrote (or found already written) and which units never arrived."""

    results: list[Path]
    aggregate: Path | None
    missing: list[Unit] = field(default_factory=list)
    already: bool = False
    shards: tuple[int, ...] = ()  # the indices of the shards merged
    refused: list[str] = field(default_factory=list)  # one line per entry not copied


def _sealed_shards(
    shards: Sequence[Shard], bound: Mapping[int, str], refused: Mapping[Path, list[Refused]]
) -> list[dict[str, Any]]:
    """Each shard's root, recomputed from what was read, whether CI's log bound it, and the
    entries of its groups the merge does not copy (only when there are any)."""
    sealed: list[dict[str, Any]] = []
    for s in shards:
        entries = [r.record for g in s.groups for r in refused.get(g.path, [])]
        sealed.append(
            {
                "index": s.index,
                "count": s.count,
                "root": s.root,
                "bound": s.index in bound,
                "leaves": s.leaves,
                **({"refused": entries} if entries else {}),
            }
        )
    return sealed


@dataclass(frozen=True)
class _Missed:
    """A trial's units, what arrived of them, and what a missing one's record says."""

    plan: Plan
    units: Sequence[Unit]
    arrived: Mapping[tuple[str, int], ShardGroup]
    count: int
    completed: str


def _record_missing_units(missed: _Missed, out: Path, result: Path, placed: list[Path]) -> None:
    """Record each unit of the trial whose shard never delivered it.

    Recorded through the result's final path (a link to the staged directory until the move),
    so the records name where the result will be, not staging.
    """
    final = out / result.name
    if final.is_symlink():
        final.unlink()  # left by a merge that was killed here
    final.symlink_to(result.relative_to(out), target_is_directory=True)
    placed.append(final)
    for unit in missed.units:
        for host, name in unit.directories:
            if (name, unit.trial) not in missed.arrived:
                _record_missing(missed.plan, unit, host, final, missed.count, missed.completed)
    final.unlink()
    placed.remove(final)


def merge(
    plan: Plan, shard_paths: Sequence[Path], out: Path, roots: Mapping[int, str] | None = None
) -> MergeOutcome:
    """Merge the shards of `plan` into result directories under `out` (see the module docs).

    `roots` binds shard K to the root its log printed: any other shard K is refused.
    """
    bound = dict(roots or {})
    loaded = [load_shard(plan, p) for p in find_shards(shard_paths)]
    _outside_shards(out, loaded)
    shards = choose_shards(plan, loaded, bound)
    count = shards[0].count
    merged = tuple(s.index for s in shards)
    arrived = _arrivals(plan, shards)
    units = plan.units()
    out = Path(os.path.realpath(out))
    targets = [_inside(out, plan.result_id(t)) for t in range(1, plan.trials + 1)]
    aggregate_id = plan.model.aggregate
    aggregate_target = _inside(out, aggregate_id) if aggregate_id else None
    missing = [u for u in units if not _delivered(u, arrived)]
    refused = refusals(shards)
    lines = [r.line for entries in refused.values() for r in entries]
    sealed_shards = _sealed_shards(shards, bound, refused)
    # Timestamps come from the shards' own records, so the same shards merge to the same bytes.
    started = min(str(s.record["startedAt"]) for s in shards)
    completed = max(str(s.record["completedAt"]) for s in shards)
    budget = _budget(shards, count)
    existing = [t for t in (*targets, aggregate_target) if t is not None and os.path.lexists(t)]
    if existing:
        reason: str | None = "not every result of the plan is there"
        if len(existing) == len(targets) + (aggregate_target is not None):
            times = (started, completed)
            reason = differs(plan, targets, aggregate_target, arrived, sealed_shards, times, budget)
        if reason is None:
            return MergeOutcome(targets, aggregate_target, missing, True, merged, lines)
        raise MergeError(
            f"{existing[0]} already exists and holds other evidence ({reason}); results are "
            "never rewritten: merge into another directory (-o)"
        )
    out.mkdir(parents=True, exist_ok=True)
    staging = _inside(out, f".{plan.id}.merging.{secrets.token_hex(4)}")
    staging.mkdir()
    placed: list[Path] = []
    try:
        for trial in range(1, plan.trials + 1):
            result = staging / plan.result_id(trial)
            result.mkdir()
            write_invocation(result, invocation_record(plan, trial, started_at=started))
            layout.groups_dir(result).mkdir()
            trial_units = [u for u in units if u.trial == trial]
            for unit in trial_units:
                for host, name in unit.directories:
                    source = arrived.get((name, unit.trial))
                    if source is not None:
                        skipped = {r.rel for r in refused[source.path]}
                        _place(unit, source, layout.group_dir(result, unit.group, host), skipped)
            if not all(_delivered(u, arrived) for u in trial_units):
                missed = _Missed(plan, trial_units, arrived, count, completed)
                _record_missing_units(missed, out, result, placed)
            # And the seal over it, as one machine would.
            write_summary(result, trial, budget, completed_at=completed, shards=sealed_shards)
        if aggregate_id:
            trial_dirs = [staging / plan.result_id(t) for t in range(1, plan.trials + 1)]
            record = aggregate(aggregate_id, trial_dirs, plan.trials, budget)
            record["completedAt"] = completed
            write_json_once(layout.aggregate_file(staging / aggregate_id), record)
        for name in sorted(os.listdir(staging)):
            os.rename(staging / name, _inside(out, name))
    finally:
        for link in placed:
            link.unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
    return MergeOutcome(targets, aggregate_target, missing, shards=merged, refused=lines)


def _outside_shards(out: Path, shards: Sequence[Shard]) -> None:
    """Refuse a `-o` in a shard (or a link there): a shard's directory, which its sender
    controls, is never where a merge writes, nor what decides where it writes."""
    given = Path(os.path.abspath(out))
    places = {Path(os.path.realpath(given)), Path(os.path.realpath(given.parent)) / given.name}
    for shard in shards:
        for place in places:
            if place == shard.path or shard.path in place.parents:
                raise MergeError(
                    f"-o {out} is inside the shard {shard.path}: a merge never writes into a "
                    "shard; choose an -o outside every shard given"
                )


def owning_shard(plan: Plan, unit: Unit, count: int) -> int:
    """Which shard K of `count` a unit belongs to (the assignment `shard.shard_units` uses)."""
    units = plan.units()
    return assign(units, count)[units.index(unit)]


def _inside(out: Path, name: str) -> Path:
    """`out/name`, refused unless it stays directly inside `out` (no link, no `..`)."""
    target = out / name
    if not layout.is_safe_id(name) or os.path.realpath(target.parent) != str(out):
        raise MergeError(f"refusing to write {target}: it is not inside {out}")
    if os.path.islink(target) and not os.path.realpath(target).startswith(f"{out}{os.sep}"):
        raise MergeError(f"refusing to write {target}: it is a link out of {out}")
    return target


def _delivered(unit: Unit, arrived: Mapping[tuple[str, int], ShardGroup]) -> bool:
    """Whether a shard delivered the unit on every one of its hosts."""
    return all((name, unit.trial) in arrived for _host, name in unit.directories)


def _arrivals(plan: Plan, shards: Sequence[Shard]) -> dict[tuple[str, int], ShardGroup]:
    """(group directory name, trial) → the one shard group that delivered it.

    Only the group directories each shard's root was computed over (`Shard.groups`): a
    directory that appeared in a shard after it was hashed is never merged.
    """
    units = plan.units()
    owners = assign(units, shards[0].count) if shards else []
    # Each planned group directory → the shard K the plan gives its unit to.
    planned = {
        (name, u.trial): owner
        for u, owner in zip(units, owners, strict=True)
        for _host, name in u.directories
    }
    arrived: dict[tuple[str, int], ShardGroup] = {}
    for shard in shards:
        for group in shard.groups:
            key = (group.path.name, group.trial)
            if key not in planned:
                raise MergeError(f"{group.path} is not a unit of plan {plan.id}")
            if planned[key] != shard.index:
                raise MergeError(
                    f"{group.path} is a unit of shard {planned[key]}/{shard.count}, not of "
                    f"shard {shard.index}: a shard delivers only the units the plan gives it"
                )
            if key in arrived:
                raise MergeError(
                    f"unit {group.path.name} (trial {group.trial}) arrived twice: in "
                    f"{arrived[key].path} and {group.path}"
                )
            arrived[key] = group
    return arrived


def _budget(shards: Sequence[Shard], count: int) -> dict[str, Any] | None:
    """Total spend over the shards; each shard held ceiling / N, so the ceiling is share × N.

    Shards that charged one Redis ledger each recorded its whole state: the total is the
    latest of those (spend only grows), not their sum.
    """
    budgets = [s.record["budget"] for s in shards if s.record.get("budget")]
    if not budgets:
        return None
    if any(s.record.get("ledger") for s in shards):
        latest = max(budgets, key=lambda b: float(b["spent"]))
        return {
            "maxCost": round(float(latest["maxCost"]), 10),
            "spent": round(float(latest["spent"]), 10),
            "exhausted": any(bool(b["exhausted"]) for b in budgets),
        }
    return {
        "maxCost": round(float(budgets[0]["maxCost"]) * count, 10),
        "spent": round(sum(float(b["spent"]) for b in budgets), 10),
        "exhausted": any(bool(b["exhausted"]) for b in budgets),
    }


def _place(unit: Unit, source: ShardGroup, target: Path, refused: set[str]) -> None:
    """Copy one arrived group and prove the copy against its manifest (but for the `refused`
    entries it records by kind), and that manifest against the one its shard's root was
    computed over (the bytes hashed, not a re-read)."""
    written: dict[str, str] = {}
    try:
        copy_group_tree(source.path, target, digests=written)
    except CopyError as error:
        raise MergeError(str(error)) from None
    copied = target / layout.MANIFEST
    if (sha256_file(copied) if copied.is_file() else None) != source.manifest:
        raise MergeError(
            f"{source.path / layout.MANIFEST} changed while it was being merged: it is not the "
            "manifest its shard's root was computed over; merge again"
        )
    problems = verify_group(target, refused, written)
    if problems:
        raise MergeError(
            f"group {unit.group} (trial {unit.trial}) from {source.path} does not match its "
            "manifest:\n" + "\n".join(problems)
        )


def _record_missing(
    plan: Plan, unit: Unit, host: str, result: Path, count: int, completed: str
) -> None:
    """A unit (on `host`) no shard delivered: its selected variants `infrastructure-failed`,
    shard-missing."""
    entry = plan.group_entry(unit.group)
    root = Path(plan.model.root)
    path = root / entry.path
    declared = parse_group(entry.definition, path, registered())
    loaded = LoadedGroup(
        path=path,
        position=entry.position,
        group=declared.on_host(host),
        raw=entry.definition,
        sha256=entry.sha256,
    )
    stopped = CancelToken()
    stopped.cancel(SHARD_MISSING)
    env = Environment(
        root=root,
        resolver=SourceResolver(root, pinned=plan.model.pins),
        cancel=stopped,
        binary=_never,
        endpoint=_never,
        no_progress_s=0.0,
    )
    # Chosen or declared, as the shard that should have run it would have recorded it.
    run = GroupRun(
        loaded,
        lambda _trial: result,
        unit.trial,
        host_chosen=bool(plan.hosts),
        declared_host=declared.effective_runtime.host,
        clock=lambda: completed,
    )
    run.selected = {v: v in unit.variants for v in ("baseline", "candidate")}
    shard = owning_shard(plan, unit, count)
    expected = f"{plan.id}{layout.SHARDS_SUFFIX}/{shard}-of-{count}.*/{plan.result_id(unit.trial)}"
    for variant in unit.variants:
        message = (
            f"{SHARD_MISSING}: shard {shard}/{count} never delivered {unit.group}[{variant}] "
            f"(trial {unit.trial}); expected under "
            f"{expected}/groups/{layout.group_dir_name(unit.group, host)}"
        )
        run.record_unrun(
            variant, "infrastructure-failed", {"kind": "infrastructure", "message": message}, env
        )
    run.finalise(env)


def _never(*_args: Any) -> Any:
    raise MergeError("a merge never runs a subject")
