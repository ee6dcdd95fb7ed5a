"""A shard's seal, and the chain from a merged result's seal to the roots of its shards.

A shard's seal is the same hash tree as a result's (`evidence.store`), over what one shard of a
plan wrote. Its leaves, in order: `shard.json`, then each group manifest of each planned result
(`<result id>/groups/<name>/manifest.json`). CI prints its root; a merge bound to that root
refuses any other shard, and records each shard's root and leaves in the merged seal.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ..common.entries import recorded_path
from . import layout
from .read import ReadError
from .records import SealLeaf
from .seal import SEAL_PREFIX, seal_root, verify_result
from .store import read_json, sha256_file, write_json_once


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _file_sha256(path: Path) -> str | None:
    return sha256_file(path) if _regular(path) else None


def _group_dirs(result: Path) -> list[Path]:
    groups = layout.groups_dir(result)
    if not _real_dir(groups):
        return []
    return sorted(p for p in groups.iterdir() if _real_dir(p))


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def shard_groups(shard: Path, result_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(result id, group directory name) of each group directory a shard holds, in seal
    order; symlinks are never followed."""
    found: list[tuple[str, str]] = []
    for result_id in result_ids:
        groups = layout.groups_dir(shard / result_id)
        if not (_real_dir(shard / result_id) and _real_dir(groups)):
            continue
        found.extend((result_id, n) for n in sorted(os.listdir(groups)) if _real_dir(groups / n))
    return found


def shard_group_leaf(result_id: str, name: str) -> str:
    """The seal leaf name of a shard's group directory `name` under `result_id`."""
    return f"{result_id}/{layout.GROUPS}/{recorded_path(name)}/{layout.MANIFEST}"


def shard_seal_leaves(
    shard: Path, result_ids: Sequence[str], groups: Sequence[tuple[str, str]] | None = None
) -> list[SealLeaf]:
    """A shard's seal leaves as the shard is now on disk; symlinks are never followed.

    `groups` (from `shard_groups`) fixes which group directories are hashed.
    """
    leaves: list[SealLeaf] = [
        {"name": layout.SHARD, "sha256": _file_sha256(layout.shard_file(shard))}
    ]
    for result_id, name in shard_groups(shard, result_ids) if groups is None else groups:
        manifest = layout.groups_dir(shard / result_id) / name / layout.MANIFEST
        leaves.append({"name": shard_group_leaf(result_id, name), "sha256": _file_sha256(manifest)})
    return leaves


def write_shard_seal(shard: Path, result_ids: Sequence[str]) -> str:
    """Seal a finished shard: write `shard-seal.json` once, after `shard.json`. Returns the root."""
    leaves = shard_seal_leaves(shard, result_ids)
    root = seal_root(leaves)
    write_json_once(
        layout.shard_seal_file(shard),
        {"schema_version": 1, "algorithm": "sha256", "leaves": leaves, "root": root},
    )
    return root


def verify_shard_chain(result: Path) -> list[str]:
    """What breaks the chain from a merged result's seal to the shard roots it records.

    Each recorded shard root must be the hash of its recorded leaves, and each of those leaves
    that names a group of this result must be that group's manifest as it is now. Nothing for
    a result that was not merged (its seal records no shards).
    """
    seal_path = layout.seal_file(result)
    try:
        shards = read_json(seal_path).get("shards") if _regular(seal_path) else None
    except (OSError, ValueError, AttributeError, ReadError):
        return []  # a damaged seal is reported by `verify_seal`
    if shards is None:
        return []
    if not isinstance(shards, list):
        return [f"damaged seal: {seal_path} (shards is not a list)"]
    invocation_path = layout.invocation_file(result)
    try:
        identity = read_json(invocation_path).get("id") if invocation_path.is_file() else None
    except (OSError, ValueError, AttributeError, ReadError):
        identity = None
    result_id = identity if isinstance(identity, str) else result.name
    here = {
        f"{result_id}/{layout.GROUPS}/{recorded_path(d.name)}/{layout.MANIFEST}": d
        for d in _group_dirs(result)
    }
    problems: list[str] = []
    for shard in shards:
        try:
            label = f"shard {int(shard['index'])}/{int(shard['count'])}"
            leaves = [dict(leaf) for leaf in shard["leaves"]]
            names = [str(leaf["name"]) for leaf in leaves]
            root = str(shard["root"])
            computed = seal_root(leaves)
        except (TypeError, KeyError, ValueError, AttributeError) as error:
            detail = f"{type(error).__name__}: {error}"
            problems.append(f"damaged seal: {seal_path} (a shard entry: {detail})")
            continue
        if computed != root:
            problems.append(
                f"changed: {seal_path} ({label}: its root {SEAL_PREFIX}{root} is not the hash "
                "of its recorded leaves)"
            )
            continue
        for name, leaf in zip(names, leaves, strict=True):
            group_dir = here.get(name)
            if not name.startswith(f"{result_id}/"):
                continue  # another trial's group: checked by that trial's verify
            if group_dir is None:
                problems.append(
                    f"missing: {result / name.removeprefix(f'{result_id}/').rsplit('/', 1)[0]} "
                    f"(a group {label} sealed under {SEAL_PREFIX}{root})"
                )
            elif _file_sha256(group_dir / layout.MANIFEST) != leaf.get("sha256"):
                problems.append(
                    f"changed: {group_dir / layout.MANIFEST} (not the manifest {label} sealed "
                    f"under {SEAL_PREFIX}{root})"
                )
    return problems


def unbound_shards(result: Path) -> list[int]:
    """The indices of the shards a merged result's seal records as merged without a root."""
    try:
        shards = read_json(layout.seal_file(result)).get("shards") or []
        return sorted(int(s["index"]) for s in shards if s.get("bound") is not True)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, ReadError):
        return []  # a damaged seal is reported by `verify_seal`


def verify(result: Path, expected_root: str | None = None) -> list[str]:
    """Every changed, missing or extra evidence file of a result, one line each (`skill-eval
    verify`).

    With `expected_root` (hex), also a root hash that is not the one expected; for a merged
    result, also any break in the chain from its seal to the shard roots it records.
    """
    # The advisory review is replaceable and never in a manifest; it is not evidence.
    return [*verify_result(result, layout.ADVISORY, expected_root), *verify_shard_chain(result)]
