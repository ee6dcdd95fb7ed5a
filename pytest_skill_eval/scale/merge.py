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
from ..evidence import layout, read_json, verify_group, write_json_once
from ..evidence.store import SEAL_PREFIX, seal_root, shard_seal_leaves
from ..evidence.summary import write_invocation, write_summary
from ..hosts.process import CancelToken
from ..run import Environment, GroupRun
from ..trials import aggregate
from ..workspace import SourceResolver
from ..workspace.entries import open_regular
from .balance import assign
from .models import check_shard
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
    shards: tuple[int, ...] = ()  # the indices of the shards merged


@dataclass(frozen=True, slots=True)
class _Shard:
    path: Path
    record: dict[str, Any]
    # The seal's leaves and root as recomputed from what the merge reads (not as recorded).
    leaves: list[dict[str, Any]]
    root: str
    sealed: str | None  # the root its own `shard-seal.json` records

    @property
    def index(self) -> int:
        return int(self.record["shard"]["index"])

    @property
    def count(self) -> int:
        return int(self.record["shard"]["count"])

    @property
    def label(self) -> str:
        return f"shard {self.index}/{self.count} ({self.path})"


def find_shards(paths: Sequence[Path]) -> list[Path]:
    """Shard directories: each path that holds `shard.json`, else every one found below it.

    The paths given are the user's; below them no symlink is followed.
    """
    found: list[Path] = []
    for path in paths:
        if os.path.lexists(layout.shard_file(path)):
            found.append(path.resolve())
            continue
        below: list[Path] = []
        if path.is_dir():
            for directory, dirnames, filenames in os.walk(path.resolve()):
                dirnames.sort()
                if layout.SHARD in filenames or layout.SHARD in dirnames:
                    below.append(Path(directory))
                    dirnames.clear()  # a shard holds no other shard
        if not below:
            raise MergeError(f"no shard record ({layout.SHARD}) in or below {path}")
        found.extend(below)
    return sorted(set(found))


def parse_shard_roots(given: Sequence[str], source: str = "--shard-root") -> dict[int, str]:
    """`K=sha256:<hex>` each (as a shard's log printed it) → {K: hex}; one K once."""
    roots: dict[int, str] = {}
    for text in given:
        index, equals, digest = text.strip().partition("=")
        root = digest.strip().lower().removeprefix(SEAL_PREFIX)
        valid = len(root) == 64 and all(c in "0123456789abcdef" for c in root)
        if not equals or not index.strip().isdigit() or int(index) < 1 or not valid:
            raise MergeError(
                f"{source}: expected K=sha256:<64 hex digits> (shard K's root, as its log "
                f"printed it), not {text.strip()!r}"
            )
        if int(index) in roots and roots[int(index)] != root:
            raise MergeError(f"{source}: shard {int(index)} is given two different roots")
        roots[int(index)] = root
    return roots


def merge(
    plan: Plan, shard_paths: Sequence[Path], out: Path, roots: Mapping[int, str] | None = None
) -> MergeOutcome:
    """Merge the shards of `plan` into result directories under `out` (see the module docs).

    `roots` binds shard K to the root its log printed: any other shard K is refused.
    """
    bound = dict(roots or {})
    loaded = [_load_shard(plan, p) for p in find_shards(shard_paths)]
    shards = _newest_per_index(plan, loaded, bound)
    count = shards[0].count
    merged = tuple(s.index for s in shards)
    arrived = _arrivals(plan, shards)
    units = plan.units()
    out = Path(os.path.realpath(out))
    targets = [_inside(out, plan.result_id(t)) for t in range(1, plan.trials + 1)]
    aggregate_id = plan.data.get("aggregate")
    aggregate_target = _inside(out, aggregate_id) if aggregate_id else None
    missing = [u for u in units if not _delivered(u, arrived)]
    existing = [t for t in (*targets, aggregate_target) if t is not None and t.exists()]
    if existing:
        if len(existing) == len(targets) + (aggregate_target is not None) and _same_groups(
            plan, targets, arrived
        ):
            return MergeOutcome(targets, aggregate_target, missing, already=True, shards=merged)
        raise MergeError(
            f"{existing[0]} already exists and holds other evidence; results are never "
            "rewritten: merge into another directory (-o)"
        )
    out.mkdir(parents=True, exist_ok=True)
    staging = _inside(out, f".{plan.id}.merging.{secrets.token_hex(4)}")
    staging.mkdir()
    # Each shard's root, recomputed from what was read, and whether CI's log bound it.
    sealed_shards = [
        {
            "index": s.index,
            "count": s.count,
            "root": s.root,
            "bound": s.index in bound,
            "leaves": s.leaves,
        }
        for s in shards
    ]
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
    return MergeOutcome(targets, aggregate_target, missing, shards=merged)


def owning_shard(plan: Plan, unit: Unit, count: int) -> int:
    """Which shard K of `count` a unit belongs to (the assignment `shard.shard_units` uses)."""
    units = plan.units()
    return assign(units, count)[units.index(unit)]


def _load_shard(plan: Plan, path: Path) -> _Shard:
    """Read and check a shard record, and recompute the shard's root from what is on disk."""
    record_path = layout.shard_file(path)
    record = _read_regular_json(record_path)
    problem = check_shard(record, record_path)
    if problem is not None:
        raise MergeError(f"{problem}; the shard record is damaged: re-run the shard")
    if record["plan"] != plan.id or record["planSha256"] != plan.sha256:
        raise MergeError(
            f"{path} is a shard of plan {record.get('plan')!r}, not of {plan.path} "
            f"({plan.id}); merge each plan's shards with their own plan"
        )
    expected = {str(t): plan.result_id(t) for t in range(1, plan.trials + 1)}
    if record["results"] != expected:
        raise MergeError(f"{record_path}: field results: not the result ids of {plan.path}")
    _refuse_links(path, plan)
    leaves = shard_seal_leaves(path, list(expected.values()))
    return _Shard(path, record, leaves, seal_root(leaves), _sealed_root(path))


def _read_regular_json(path: Path) -> Any:
    """A JSON file of a shard that must be a regular file (a symlink is never followed)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise MergeError(f"{path} is not a regular file (a symlink?); refusing to follow it")
        return read_json(path)
    except (OSError, ValueError) as error:
        raise MergeError(f"cannot read {path}: {error}") from None


def _sealed_root(path: Path) -> str | None:
    """The root the shard's own `shard-seal.json` records, or None when it has none."""
    seal_path = layout.shard_seal_file(path)
    if not os.path.lexists(seal_path):
        return None
    seal = _read_regular_json(seal_path)
    root = seal.get("root") if isinstance(seal, dict) else None
    if not isinstance(root, str) or seal_root(seal.get("leaves") or []) != root:
        raise MergeError(f"{seal_path}: its root is not the hash of its leaves (edited)")
    return root


def _refuse_links(path: Path, plan: Plan) -> None:
    """A shard's result and `groups` directories and every group directory must be real
    directories: a symlink there would merge evidence from outside the shard."""
    for trial in range(1, plan.trials + 1):
        for directory in (
            path / plan.result_id(trial),
            layout.groups_dir(path / plan.result_id(trial)),
        ):
            if os.path.lexists(directory) and not _real_dir(directory):
                raise MergeError(
                    f"{directory} is not a directory of the shard (a symlink?); refusing to "
                    "follow it: a shard's evidence is merged only from inside it"
                )
        groups = layout.groups_dir(path / plan.result_id(trial))
        if not _real_dir(groups):
            continue
        for name in sorted(os.listdir(groups)):
            if not _real_dir(groups / name):
                raise MergeError(
                    f"{groups / name} is not a group directory (a symlink?); refusing to "
                    "follow it: a shard's evidence is merged only from inside it"
                )


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _inside(out: Path, name: str) -> Path:
    """`out/name`, refused unless it stays directly inside `out` (no link, no `..`)."""
    target = out / name
    if not layout.is_safe_id(name) or os.path.realpath(target.parent) != str(out):
        raise MergeError(f"refusing to write {target}: it is not inside {out}")
    if os.path.islink(target) and not os.path.realpath(target).startswith(f"{out}{os.sep}"):
        raise MergeError(f"refusing to write {target}: it is a link out of {out}")
    return target


def _newest_per_index(plan: Plan, shards: list[_Shard], bound: Mapping[int, str]) -> list[_Shard]:
    """One run per shard index: a re-run shard (completed later) replaces an earlier one.

    A shard bound to a root is the run of its index with that root, or refused; an unbound
    shard must still match its own seal (evidence changed without re-sealing is refused).
    """
    if not shards:
        raise MergeError(f"no shards of plan {plan.id} given")
    counts = {s.count for s in shards}
    if len(counts) > 1:
        raise MergeError(f"shards of one plan split it differently: N = {sorted(counts)}")
    (count,) = counts
    beyond = sorted(k for k in bound if k > count)
    if beyond:
        raise MergeError(f"--shard-root names shard {beyond[0]}, but the plan ran as {count}")
    runs: dict[int, list[_Shard]] = {}
    for shard in sorted(shards, key=lambda s: (str(s.record["completedAt"]), s.path.name)):
        runs.setdefault(shard.index, []).append(shard)
    absent = sorted(set(bound) - set(runs))
    if absent:
        raise MergeError(
            f"--shard-root binds shard {absent[0]}/{count}, but no shard {absent[0]} of plan "
            f"{plan.id} was given; pass its directory (or drop its root to record it missing)"
        )
    chosen: list[_Shard] = []
    for index in sorted(runs):
        newest = runs[index][-1]
        if index in bound:
            matching = [s for s in runs[index] if s.root == bound[index]]
            if not matching:
                raise MergeError(
                    f"{newest.label} hashes to {SEAL_PREFIX}{newest.root}, not the bound "
                    f"{SEAL_PREFIX}{bound[index]}: its evidence is not what the shard sealed"
                )
            chosen.append(matching[-1])
            continue
        if newest.sealed is None:
            raise MergeError(
                f"{newest.label} has no {layout.SHARD_SEAL}: it is unfinished or was never "
                "sealed; re-run the shard"
            )
        if newest.sealed != newest.root:
            raise MergeError(
                f"{newest.label} hashes to {SEAL_PREFIX}{newest.root}, not its sealed "
                f"{SEAL_PREFIX}{newest.sealed}: its evidence changed after it was sealed"
            )
        chosen.append(newest)
    return chosen


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
            if not _real_dir(groups):
                continue
            for group_dir in sorted(p for p in groups.iterdir() if _real_dir(p)):
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
    """Copy a group directory exactly, never following a link.

    A symlink is copied as a link only where the run records one as evidence: what a subject
    left in its workspace (`<variant>/workspace/…`, `<variant>/turns/<n>/workspace/…`), which
    every reader treats as a link. Anywhere else a reader would follow it (to a `run.json` or
    `final.md` outside the shard, say): the group is refused. FIFOs are recreated, never opened.
    """
    for directory, dirnames, filenames in os.walk(source):
        base = Path(directory)
        destination = target / base.relative_to(source)
        destination.mkdir(parents=True, exist_ok=destination != target)
        links = [d for d in dirnames if (base / d).is_symlink()]
        dirnames[:] = sorted(d for d in dirnames if d not in links)
        for name in (*filenames, *links):
            _copy_entry(base / name, destination / name, (base / name).relative_to(source))


def _recorded_link(relative: Path) -> bool:
    """Whether a symlink at `relative` (in a group directory) is a subject's workspace entry."""
    parts = relative.parts
    if len(parts) >= 3 and parts[1] == "workspace":
        return True
    return len(parts) >= 5 and parts[1] == "turns" and parts[3] == "workspace"


def _copy_entry(source: Path, target: Path, relative: Path) -> None:
    mode = os.lstat(source).st_mode
    if stat.S_ISLNK(mode):
        if not _recorded_link(relative):
            raise MergeError(
                f"{source} is a symlink, which no run writes there; refusing to merge or "
                "follow it: a shard's evidence is merged only from inside it"
            )
        os.symlink(os.readlink(source), target)
    elif stat.S_ISREG(mode):
        # A copy, never a hard link: a later change to the shard's file must not reach the
        # sealed result (nor the other way round). The manifest re-hash then proves the copy.
        opened = open_regular(source)
        if not isinstance(opened, int):
            raise MergeError(f"{source} changed while it was being merged; merge again")
        with open(opened, "rb") as reading, open(target, "xb") as writing:
            shutil.copyfileobj(reading, writing)
        os.chmod(target, stat.S_IMODE(mode))
    elif stat.S_ISFIFO(mode):
        os.mkfifo(target, stat.S_IMODE(mode))  # never opened: a FIFO would block
    else:
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError as error:
            raise MergeError(f"cannot copy the special file {source}: {error}") from None
