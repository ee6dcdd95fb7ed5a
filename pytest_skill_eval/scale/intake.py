"""What a merge accepts from a shard: found without following links, its record checked
field by field, its root recomputed from what is read, and one run per shard index chosen
(the one bound to the root CI printed, when given)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common.entries import open_regular
from ..errors import SkillEvalError
from ..evidence import layout
from ..evidence.read import MAX_JSON_BYTES, parse_evidence_json
from ..evidence.records import SealLeaf
from ..evidence.seal import SEAL_PREFIX, seal_root
from ..evidence.shard_seal import shard_groups, shard_seal_leaves
from ..evidence.store import sha256_bytes
from .plan import Plan


class MergeError(SkillEvalError):
    """Shards cannot be merged: foreign or damaged evidence, or a unit that arrived twice."""


@dataclass(frozen=True, slots=True)
class ShardGroup:
    """A group directory a shard holds, and the sha256 of its manifest as the root hashed it."""

    trial: int
    path: Path
    manifest: str | None


@dataclass(frozen=True, slots=True)
class Shard:
    path: Path
    record: dict[str, Any]
    # The seal's leaves and root as recomputed from what the merge reads (not as recorded).
    leaves: list[SealLeaf]
    root: str
    sealed: str | None  # the root its own `shard-seal.json` records
    # The group directories the root covers: the merge copies these and no other.
    groups: tuple[ShardGroup, ...] = ()

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


def load_shard(plan: Plan, path: Path) -> Shard:
    """Read and check a shard record, and recompute the shard's root from what is on disk.

    The root covers the very bytes of `shard.json` the merge parsed (read once) and the group
    directories found then, which are the only ones the merge copies: a record or a group
    swapped in after the hashing is never merged unhashed.
    """
    record_path = layout.shard_file(path)
    record_bytes = _read_regular(record_path)
    record = _parse_json(record_path, record_bytes)
    from .models import check_shard  # its pydantic models are built only by a merge

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
    found = shard_groups(path, list(expected.values()))
    leaves = shard_seal_leaves(path, list(expected.values()), found)
    leaves[0]["sha256"] = sha256_bytes(record_bytes)
    trials = {result_id: int(trial) for trial, result_id in expected.items()}
    groups = tuple(
        ShardGroup(trials[result_id], layout.groups_dir(path / result_id) / name, leaf["sha256"])
        for (result_id, name), leaf in zip(found, leaves[1:], strict=True)
    )
    return Shard(path, record, leaves, seal_root(leaves), _sealed_root(path), groups)


def _read_regular(path: Path) -> bytes:
    """The bytes of a shard's file that must be a regular file (a symlink is never followed)."""
    try:
        opened = open_regular(path)
        if not isinstance(opened, int):
            raise MergeError(f"{path} is not a regular file (a symlink?); refusing to follow it")
        with open(opened, "rb") as handle:
            return handle.read(MAX_JSON_BYTES + 1)  # more is refused as damage when parsed
    except OSError as error:
        raise MergeError(f"cannot read {path}: {error}") from None


def _parse_json(path: Path, data: bytes) -> Any:
    return parse_evidence_json(path, data)


def _read_regular_json(path: Path) -> Any:
    """A JSON file of a shard that must be a regular file (a symlink is never followed)."""
    return _parse_json(path, _read_regular(path))


def _sealed_root(path: Path) -> str | None:
    """The root the shard's own `shard-seal.json` records, or None when it has none."""
    seal_path = layout.shard_seal_file(path)
    if not os.path.lexists(seal_path):
        return None
    seal = _read_regular_json(seal_path)
    try:
        root = seal["root"]
        consistent = isinstance(root, str) and seal_root(seal["leaves"]) == root
    except (TypeError, KeyError, AttributeError, ValueError):  # ValueError: a lone surrogate
        consistent = False
    if not consistent:
        raise MergeError(f"{seal_path}: its root is not the hash of its leaves (edited)")
    return str(root)


def _refuse_links(path: Path, plan: Plan) -> None:
    """A shard's result and `groups` directories and every group directory must be real
    directories: a symlink there would merge evidence from outside the shard."""
    for trial in range(1, plan.trials + 1):
        for directory in (
            path / plan.result_id(trial),
            layout.groups_dir(path / plan.result_id(trial)),
        ):
            if os.path.lexists(directory) and not real_dir(directory):
                raise MergeError(
                    f"{directory} is not a directory of the shard (a symlink?); refusing to "
                    "follow it: a shard's evidence is merged only from inside it"
                )
        groups = layout.groups_dir(path / plan.result_id(trial))
        if not real_dir(groups):
            continue
        for name in sorted(os.listdir(groups)):
            if not real_dir(groups / name):
                raise MergeError(
                    f"{groups / name} is not a group directory (a symlink?); refusing to "
                    "follow it: a shard's evidence is merged only from inside it"
                )


def real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def choose_shards(plan: Plan, shards: list[Shard], bound: Mapping[int, str]) -> list[Shard]:
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
    runs: dict[int, list[Shard]] = {}
    for shard in sorted(shards, key=lambda s: (str(s.record["completedAt"]), s.path.name)):
        runs.setdefault(shard.index, []).append(shard)
    absent = sorted(set(bound) - set(runs))
    if absent:
        raise MergeError(
            f"--shard-root binds shard {absent[0]}/{count}, but no shard {absent[0]} of plan "
            f"{plan.id} was given; pass its directory (or drop its root to record it missing)"
        )
    chosen: list[Shard] = []
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
