"""The result seal (a hash tree over a result, written last) and verifying a result against it."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..common.entries import recorded_path
from . import layout, shapes
from .read import ReadError, damaged
from .records import SealLeaf, SealRecord
from .store import (
    EvidenceError,
    covers_directories,
    read_json,
    sha256_bytes,
    sha256_file,
    verify_group,
    write_json_once,
)


def unfinished(result: Path) -> str | None:
    """Why a result was never finished (no summary, no seal: its run stopped early), or None."""
    if not layout.groups_dir(result).is_dir() or any(
        (result / name).exists() for name in (layout.SUMMARY, layout.SEAL)
    ):
        return None  # not a result (`verify_result` says so), or one to verify
    return (
        f"incomplete: {result} was never finished (no {layout.SUMMARY}, no {layout.SEAL}): the "
        "run that wrote it stopped before its end (a full results disk, a killed run), so it "
        "cannot be verified as a whole; its files are kept as they were left"
    )


def verify_result(
    result: Path, advisory: Collection[str] = (), expected_root: str | None = None
) -> list[str]:
    """Every changed, missing or extra evidence file of a result, one line each.

    Each group is checked against its manifest, and the result against its seal: a changed
    `invocation.json` or `summary.json`, a group directory that is gone or new, and a manifest
    rewritten with its files each get their own line. With `expected_root` (hex), a result whose
    recomputed root differs is reported too, even when its seal was recomputed to match.
    `advisory` names group entries that are replaceable and never in a manifest.
    """
    groups = layout.groups_dir(result)
    if not groups.is_dir():
        return [f"not a result directory (no {layout.GROUPS}/): {result}"]
    problems: list[str] = []
    for entry in sorted(result.iterdir()):
        if entry.name not in (layout.GROUPS, *layout.RESULT_FILES):
            problems.append(f"extra: {entry}")
    problems.extend(
        f"missing: {result / name}" for name in layout.RESULT_FILES if not (result / name).is_file()
    )
    # Only real group directories belong in groups/: a file, or a link (even to a group that
    # verifies), is no group the seal covers.
    problems.extend(
        f"extra: {entry}"
        for entry in sorted(groups.iterdir())
        if entry.is_symlink() or not entry.is_dir()
    )
    refused = merge_refused(result)
    for group_dir in sorted(p for p in groups.iterdir() if p.is_dir() and not p.is_symlink()):
        skipped = tuple(f"extra: {group_dir / name}" for name in advisory)
        problems.extend(
            line
            for line in verify_group(group_dir, refused.get(recorded_path(group_dir.name), ()))
            if not any(line == a or line.startswith(a + "/") for a in skipped)
        )
    problems.extend(verify_seal(result, expected_root))
    return problems


def merge_refused(result: Path) -> dict[str, set[str]]:
    """The entries a merge refused to copy into `result`, as its seal records them (each
    merged shard's `refused`, sealed with the shard roots): group directory → entries."""
    seal_path = layout.seal_file(result)
    try:
        shards = read_json(seal_path).get("shards") if _regular(seal_path) else None
        invocation = layout.invocation_file(result)
        identity = read_json(invocation).get("id") if _regular(invocation) else None
    except (ReadError, AttributeError):
        return {}  # a damaged seal or invocation is a difference reported on its own
    prefix = f"{identity if isinstance(identity, str) else result.name}/{layout.GROUPS}/"
    found: dict[str, set[str]] = {}
    for shard in shards if isinstance(shards, list) else []:
        entries = shard.get("refused") if isinstance(shard, Mapping) else None
        for entry in entries if isinstance(entries, list) else []:
            path = entry.get("path") if isinstance(entry, Mapping) else None
            if isinstance(path, str) and path.startswith(prefix):
                group, _, rel = path.removeprefix(prefix).partition("/")
                found.setdefault(group, set()).add(rel)
    return found


def files_only_manifests(result: Path) -> list[Path]:
    """The group manifests of a result written in the earlier format, which list files only:
    `verify` checks their files and says their directories are not covered."""
    found: list[Path] = []
    for group_dir in _group_dirs(result):
        manifest = group_dir / layout.MANIFEST
        try:
            older = _regular(manifest) and not covers_directories(
                read_json(manifest, shapes.MANIFEST)
            )
        except ReadError:
            continue  # a damaged manifest is a difference `verify_result` reports
        if older:
            found.append(manifest)
    return found


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


# ---------------------------------------------------------------------------------------------
# The result seal: a hash tree over a result, written last.
#
# Its leaves, in order: `invocation.json`, the groups the invocation planned (ids as canonical
# JSON), each group's `manifest.json` (which in turn lists every evidence file of its group), and
# `summary.json`. A leaf hashes as sha256("<name>\0<sha256 of its bytes>"); the root is the
# sha256 of the leaf hashes, in order. A changed byte anywhere below a manifest changes the
# manifest or fails it; a rewritten manifest changes the root, which CI printed.

SEAL_PREFIX = "sha256:"


def planned_groups(invocation: Any) -> list[str]:
    """Ids of the groups `invocation.json` planned: its definitions' groups its selector picks."""
    if not isinstance(invocation, Mapping):
        return []
    selection = invocation.get("selection")
    selector = selection.get("group") if isinstance(selection, Mapping) else None
    selectors = [selector] if isinstance(selector, str) else list(selector or [])
    selectors = [s for s in selectors if isinstance(s, str)]
    planned: set[str] = set()
    definitions = invocation.get("definitions")
    for definition in definitions if isinstance(definitions, list) else []:
        groups = definition.get("groups") if isinstance(definition, Mapping) else None
        for group in groups if isinstance(groups, list) else []:
            if not isinstance(group, Mapping) or not isinstance(group.get("id"), str):
                continue
            if not selectors or {group["id"], str(group.get("position"))} & set(selectors):
                planned.add(group["id"])
    return sorted(planned)


def _file_sha256(path: Path) -> str | None:
    return sha256_file(path) if path.is_file() and not path.is_symlink() else None


def _group_dirs(result: Path) -> list[Path]:
    groups = layout.groups_dir(result)
    if not groups.is_dir():
        return []
    return sorted(p for p in groups.iterdir() if p.is_dir() and not p.is_symlink())


def seal_leaves(result: Path, shards: Sequence[Mapping[str, Any]] | None = None) -> list[SealLeaf]:
    """The seal's leaves as the result is now on disk (a missing file's sha256 is None).

    A merged result's seal also records the roots of the shards it merged (`shards`): one
    leaf over them, so the merged root binds each shard's root.
    """
    invocation_path = layout.invocation_file(result)
    try:
        invocation = read_json(invocation_path) if invocation_path.is_file() else None
    except ReadError:
        invocation = None  # a damaged invocation.json still has a (changed) sha256 leaf
    planned = planned_groups(invocation)
    leaves: list[SealLeaf] = [
        {"name": layout.INVOCATION, "sha256": _file_sha256(invocation_path)},
        {
            "name": layout.PLANNED_GROUPS,
            "groups": planned,
            "sha256": sha256_bytes(json.dumps(planned, ensure_ascii=False).encode("utf-8")),
        },
    ]
    if shards is not None:
        text = json.dumps(shards, sort_keys=True, ensure_ascii=False)
        leaves.append({"name": layout.SHARD_ROOTS, "sha256": sha256_bytes(text.encode("utf-8"))})
    for group_dir in _group_dirs(result):
        name = f"{layout.GROUPS}/{recorded_path(group_dir.name)}/{layout.MANIFEST}"
        leaves.append({"name": name, "sha256": _file_sha256(group_dir / layout.MANIFEST)})
    leaves.append({"name": layout.SUMMARY, "sha256": _file_sha256(layout.summary_file(result))})
    return leaves


def seal_root(leaves: Iterable[Mapping[str, Any]]) -> str:
    """The root hash of a list of leaves (hex)."""
    tree = hashlib.sha256()
    for leaf in leaves:
        line = f"{leaf['name']}\0{leaf['sha256'] or 'missing'}".encode("utf-8", "surrogateescape")
        tree.update(hashlib.sha256(line).digest())
    return tree.hexdigest()


def write_seal(result: Path, shards: Sequence[Mapping[str, Any]] | None = None) -> str:
    """Seal a finished result: write `seal.json` once, after `summary.json`. Returns the root.

    `shards` (a merge's): each merged shard's `{index, count, root, bound, leaves}`.
    """
    leaves = seal_leaves(result, shards)
    root = seal_root(leaves)
    seal: SealRecord = {"schema_version": 1, "algorithm": "sha256", "leaves": leaves, "root": root}
    if shards is not None:  # a merged seal: the shards it joined, listed before its root
        seal = {
            "schema_version": 1,
            "algorithm": "sha256",
            "leaves": leaves,
            "shards": list(shards),
            "root": root,
        }
    write_json_once(layout.seal_file(result), seal)
    return root


def sealed_root(result: Path) -> str | None:
    """The root hash `seal.json` records, or None when the result has no readable seal."""
    try:
        root = read_json(layout.seal_file(result), shapes.SEAL)["root"]
    except ReadError:
        return None
    return str(root)


def looks_like_root_hash(text: str) -> bool:
    """Whether `text` is a root hash as the command line takes it (`sha256:<hex>` or `<hex>`)."""
    stripped = text.strip().lower()
    digest = stripped.removeprefix(SEAL_PREFIX)
    hexadecimal = len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)
    return hexadecimal or stripped.startswith(SEAL_PREFIX)


def parse_root(text: str) -> str:
    """A root hash as given on the command line (`sha256:<hex>` or `<hex>`), lower-case hex."""
    digest = text.strip().lower().removeprefix(SEAL_PREFIX)
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise EvidenceError(
            f"--seal expects the seal's root hash (sha256:<64 hex digits>, as the run printed "
            f"after `seal`), not {text!r}"
        )
    return digest


def _load_seal(path: Path) -> tuple[list[SealLeaf], list[dict[str, Any]] | None]:
    """A seal's leaves and, for a merged result, the shard roots it records."""
    seal = read_json(path, shapes.SEAL)
    try:
        leaves = [leaf.copy() for leaf in seal["leaves"]]
        for leaf in leaves:
            str(leaf["name"])
        root = seal["root"]
        recorded = seal.get("shards")
        shards = None if recorded is None else [dict(shard) for shard in recorded]
        # Hashable as written: every leaf has a digest, no name or shard is a lone surrogate.
        computed = seal_root(leaves)
        json.dumps(shards, sort_keys=True, ensure_ascii=False).encode("utf-8")
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as error:
        detail = f"{type(error).__name__}: {error}"
        raise damaged(path, f"a seal that cannot be hashed ({detail})") from None
    if computed != root:
        raise EvidenceError(
            f"changed: {path} (its root hash is not the hash of its leaves; the seal was edited)"
        )
    return leaves, shards


def verify_seal(result: Path, expected_root: str | None = None) -> list[str]:
    """What differs between a result and its seal (and `expected_root`), one line each.

    A file that is missing altogether is reported by `verify_result`; here each sealed leaf
    that changed, a sealed group that is gone and a group the seal never saw get a line.
    """
    seal_path = layout.seal_file(result)
    sealed, shards = _load_seal(seal_path) if os.path.lexists(seal_path) else (None, None)
    actual = seal_leaves(result, shards)
    problems: list[str] = []
    if sealed is not None:
        problems.extend(_seal_differences(result, sealed, actual))
    if expected_root is not None:
        root = seal_root(actual)
        if root != expected_root:
            problems.append(
                f"root mismatch: {result} hashes to {SEAL_PREFIX}{root}, not the expected "
                f"{SEAL_PREFIX}{expected_root}"
            )
    return problems


def _seal_differences(result: Path, sealed: list[SealLeaf], actual: list[SealLeaf]) -> list[str]:
    now = {leaf["name"]: leaf for leaf in actual}
    then = {leaf["name"]: leaf for leaf in sealed}
    problems: list[str] = []
    for name, leaf in then.items():
        current = now.get(name)
        if name == layout.PLANNED_GROUPS:
            if current is not None and current["sha256"] != leaf["sha256"]:
                problems.append(
                    f"changed: the planned groups ({layout.INVOCATION} now plans "
                    f"{', '.join(current['groups']) or 'none'}; sealed: "
                    f"{', '.join(map(str, leaf.get('groups') or [])) or 'none'})"
                )
            continue
        if current is None:
            # Only a group's manifest leaf can vanish: its whole directory is gone.
            problems.append(f"missing: {result / name.rsplit('/', 1)[0]} (a sealed group)")
        elif current["sha256"] is None or current["sha256"] == leaf["sha256"]:
            continue  # unchanged, or missing and reported as missing by verify_result
        elif name.startswith(f"{layout.GROUPS}/"):
            problems.append(
                f"changed: {result / name} (not the sealed manifest: the group's evidence "
                "was rewritten with its hashes)"
            )
        else:
            problems.append(f"changed: {result / name} (not the sealed {name})")
    problems.extend(
        f"extra: {result / name.rsplit('/', 1)[0]} (a group the seal does not cover)"
        for name in now
        if name not in then
    )
    return problems
