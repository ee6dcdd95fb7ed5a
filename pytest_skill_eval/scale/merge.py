"""`skill-eval merge`: join the shards of a plan into the result(s) one machine would have written.

Every arrived group is copied (never hard-linked, so a shard changed later cannot reach the
sealed result) and re-hashed against its manifest; every planned unit must arrive
exactly once; a unit no shard delivered is recorded `infrastructure-failed` (`shard-missing`),
never `cancelled`. Then `invocation.json`, `summary.json` and, for several trials, the aggregate
are written with the same writers a single-machine run uses. The merge is staged beside the
target and moved into place at the end, so it is all or nothing; re-running it on the same
shards finds the result already there and leaves it as it is. Every timestamp a merge writes
comes from the shards' records (the earliest start, the latest completion), never the clock,
so merging the same shards twice gives the same bytes.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..definitions import LoadedGroup, parse_group
from ..errors import SkillEvalError
from ..evidence import layout, read_json, shapes, verify_group, write_json_once
from ..evidence.summary import write_invocation, write_summary
from ..hosts.process import CancelToken
from ..run import Environment, GroupRun
from ..trials import aggregate
from ..workspace import SourceResolver
from .balance import assign
from .plan import Plan, Unit, invocation_record

SHARD_MISSING = "shard-missing"


class MergeError(SkillEvalError):
    """Shards cannot be merged: foreign or damaged evidence, or a unit that arrived twice."""


@dataclass
class MergeOutcome:
    """What a merge wrote (or found already written) and which units never arrived."""

    results: list[Path]
    aggregate: Path | None
    missing: list[Unit] = field(default_factory=list)
    already: bool = False


@dataclass(frozen=True, slots=True)
class _Shard:
    path: Path
    record: dict[str, Any]

    @property
    def index(self) -> int:
        return int(self.record["shard"]["index"])

    @property
    def count(self) -> int:
        return int(self.record["shard"]["count"])


def find_shards(paths: Sequence[Path]) -> list[Path]:
    """Shard directories: each path that holds `shard.json`, else every one found below it."""
    found: list[Path] = []
    for path in paths:
        if layout.shard_file(path).is_file():
            found.append(path.resolve())
            continue
        below = (
            sorted(p.parent.resolve() for p in path.rglob(layout.SHARD)) if path.is_dir() else []
        )
        if not below:
            raise MergeError(f"no shard record ({layout.SHARD}) in or below {path}")
        found.extend(below)
    return sorted(set(found))


def merge(plan: Plan, shard_paths: Sequence[Path], out: Path) -> MergeOutcome:
    """Merge the shards of `plan` into result directories under `out` (see the module docs)."""
    shards = _newest_per_index(plan, [_load_shard(plan, p) for p in find_shards(shard_paths)])
    count = shards[0].count
    arrived = _arrivals(plan, shards)
    units = plan.units()
    targets = [out / plan.result_id(t) for t in range(1, plan.trials + 1)]
    aggregate_id = plan.data.get("aggregate")
    aggregate_target = out / aggregate_id if aggregate_id else None
    missing = [u for u in units if not _delivered(u, arrived)]
    existing = [t for t in (*targets, aggregate_target) if t is not None and t.exists()]
    if existing:
        if len(existing) == len(targets) + (aggregate_target is not None) and _same_groups(
            plan, targets, arrived
        ):
            return MergeOutcome(targets, aggregate_target, missing, already=True)
        raise MergeError(
            f"{existing[0]} already exists and holds other evidence; results are never "
            "rewritten: merge into another directory (-o)"
        )
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".{plan.id}.merging.{secrets.token_hex(4)}"
    staging.mkdir()
    # Timestamps come from the shards' own records, so the same shards merge to the same bytes.
    started = min(str(s.record["startedAt"]) for s in shards)
    completed = max(str(s.record["completedAt"]) for s in shards)
    placed: list[Path] = []
    try:
        budget = _budget(shards, count)
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
                        _place(unit, source, layout.group_dir(result, unit.group, host))
            if not all(_delivered(u, arrived) for u in trial_units):
                # Recorded through the result's final path (a link to the staged directory
                # until the move), so the records name where the result will be, not staging.
                final = out / result.name
                if final.is_symlink():
                    final.unlink()  # left by a merge that was killed here
                final.symlink_to(result.relative_to(out), target_is_directory=True)
                placed.append(final)
                for unit in trial_units:
                    for host, name in unit.directories:
                        if (name, unit.trial) not in arrived:
                            _record_missing(plan, unit, host, final, count, completed)
                final.unlink()
                placed.remove(final)
            # And the seal over it, as one machine would.
            write_summary(result, trial, budget, completed_at=completed)
        if aggregate_id:
            trial_dirs = [staging / plan.result_id(t) for t in range(1, plan.trials + 1)]
            record = aggregate(aggregate_id, trial_dirs, plan.trials, budget)
            record["completedAt"] = completed
            write_json_once(layout.aggregate_file(staging / aggregate_id), record)
        for name in sorted(os.listdir(staging)):
            os.rename(staging / name, out / name)
    finally:
        for link in placed:
            link.unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
    return MergeOutcome(targets, aggregate_target, missing)


def owning_shard(plan: Plan, unit: Unit, count: int) -> int:
    """Which shard K of `count` a unit belongs to (the assignment `shard.shard_units` uses)."""
    units = plan.units()
    return assign(units, count)[units.index(unit)]


def _load_shard(plan: Plan, path: Path) -> _Shard:
    try:
        record = read_json(layout.shard_file(path), shapes.SHARD)
    except (OSError, ValueError) as error:
        raise MergeError(f"cannot read {layout.shard_file(path)}: {error}") from None
    if not isinstance(record, dict) or record.get("kind") != "shard":
        raise MergeError(f"{layout.shard_file(path)} is not a shard record")
    if record.get("plan") != plan.id or record.get("planSha256") != plan.sha256:
        raise MergeError(
            f"{path} is a shard of plan {record.get('plan')!r}, not of {plan.path} "
            f"({plan.id}); merge each plan's shards with their own plan"
        )
    return _Shard(path, record)


def _newest_per_index(plan: Plan, shards: list[_Shard]) -> list[_Shard]:
    """One run per shard index: a re-run shard (completed later) replaces an earlier one."""
    if not shards:
        raise MergeError(f"no shards of plan {plan.id} given")
    counts = {s.count for s in shards}
    if len(counts) > 1:
        raise MergeError(f"shards of one plan split it differently: N = {sorted(counts)}")
    newest: dict[int, _Shard] = {}
    for shard in sorted(shards, key=lambda s: (str(s.record["completedAt"]), s.path.name)):
        newest[shard.index] = shard
    return [newest[k] for k in sorted(newest)]


def _delivered(unit: Unit, arrived: Mapping[tuple[str, int], Path]) -> bool:
    """Whether a shard delivered the unit on every one of its hosts."""
    return all((name, unit.trial) in arrived for _host, name in unit.directories)


def _arrivals(plan: Plan, shards: Sequence[_Shard]) -> dict[tuple[str, int], Path]:
    """(group directory name, trial) → the one shard group directory that delivered it."""
    planned = {(name, u.trial) for u in plan.units() for _host, name in u.directories}
    arrived: dict[tuple[str, int], Path] = {}
    for shard in shards:
        for trial in range(1, plan.trials + 1):
            groups = layout.groups_dir(shard.path / plan.result_id(trial))
            if not groups.is_dir():
                continue
            for group_dir in sorted(p for p in groups.iterdir() if p.is_dir()):
                key = (group_dir.name, trial)
                if key not in planned:
                    raise MergeError(f"{group_dir} is not a unit of plan {plan.id}")
                if key in arrived:
                    raise MergeError(
                        f"unit {group_dir.name} (trial {trial}) arrived twice: in "
                        f"{arrived[key]} and {group_dir}"
                    )
                arrived[key] = group_dir
    return arrived


def _same_groups(
    plan: Plan, targets: Sequence[Path], arrived: Mapping[tuple[str, int], Path]
) -> bool:
    """Whether existing results hold exactly these arrived groups, byte for byte by manifest."""
    for trial, target in enumerate(targets, start=1):
        if not layout.summary_file(target).is_file():
            return False
        for (name, unit_trial), source in arrived.items():
            if unit_trial != trial:
                continue
            mine = layout.groups_dir(target) / name / layout.MANIFEST
            theirs = source / layout.MANIFEST
            if not mine.is_file() or mine.read_bytes() != theirs.read_bytes():
                return False
    return True


def _budget(shards: Sequence[_Shard], count: int) -> dict[str, Any] | None:
    """Total spend over the shards; each shard held ceiling / N, so the ceiling is share × N.

    Shards that charged one ledger service each recorded its whole state: the total is the
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


def _place(unit: Unit, source: Path, target: Path) -> None:
    """Copy one arrived group and prove the copy against its manifest."""
    _copy_tree(source, target)
    problems = verify_group(target)
    if problems:
        raise MergeError(
            f"group {unit.group} (trial {unit.trial}) from {source} does not match its "
            "manifest:\n" + "\n".join(problems)
        )


def _record_missing(
    plan: Plan, unit: Unit, host: str, result: Path, count: int, completed: str
) -> None:
    """A unit (on `host`) no shard delivered: its selected variants `infrastructure-failed`,
    shard-missing."""
    entry = plan.group_entry(unit.group)
    root = Path(plan.data["root"])
    path = root / entry["path"]
    declared = parse_group(entry["definition"], path)
    loaded = LoadedGroup(
        path=path,
        position=int(entry["position"]),
        group=declared.on_host(host),
        raw=entry["definition"],
        sha256=entry["sha256"],
    )
    stopped = CancelToken()
    stopped.cancel(SHARD_MISSING)
    env = Environment(
        root=root,
        resolver=SourceResolver(root, pinned=plan.data["pins"]),
        cancel=stopped,
        pi=_never,
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


def _copy_tree(source: Path, target: Path) -> None:
    """Copy a group directory exactly: symlinks as links, FIFOs recreated, never opened."""
    for directory, dirnames, filenames in os.walk(source):
        base = Path(directory)
        destination = target / base.relative_to(source)
        destination.mkdir(parents=True, exist_ok=destination != target)
        links = [d for d in dirnames if (base / d).is_symlink()]
        dirnames[:] = sorted(d for d in dirnames if d not in links)
        for name in (*filenames, *links):
            _copy_entry(base / name, destination / name)


def _copy_entry(source: Path, target: Path) -> None:
    mode = os.lstat(source).st_mode
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(source), target)
    elif stat.S_ISREG(mode):
        # A copy, never a hard link: a later change to the shard's file must not reach the
        # sealed result (nor the other way round). The manifest re-hash then proves the copy.
        shutil.copyfile(source, target, follow_symlinks=False)
        os.chmod(target, stat.S_IMODE(mode))
    elif stat.S_ISFIFO(mode):
        os.mkfifo(target, stat.S_IMODE(mode))  # never opened: a FIFO would block
    else:
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError as error:
            raise MergeError(f"cannot copy the special file {source}: {error}") from None
