"""Turning a group definition into exact inputs on disk: group resources once, then per variant."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..definitions import Group
from ..definitions.skill_lint import folder_name
from ..evidence import layout, sha256_file, write_json_once
from ..evidence.inputs import BundleRecord, ContextDelivery, RunResources, RuntimeRecord
from . import (
    Fingerprint,
    ResolvedSource,
    ResourceError,
    ResourceSnapshot,
    SourceResolver,
    context_manifest,
    copy_tree,
    fingerprint,
    snapshot_resource,
    verify_unchanged,
)

WORKING_TREE = ResolvedSource(
    kind="working-tree", ref=None, commit=None, top_level=None, root_prefix=""
)


@dataclass(frozen=True, slots=True)
class BundleSnapshot:
    """A runtime extension bundle snapshotted once for the group."""

    index: int
    entry: str
    root: Path
    resources: tuple[ResourceSnapshot, ...]

    def to_json(self) -> BundleRecord:
        """Evidence form."""
        return {
            "entry": self.entry,
            "root": str(self.root),
            "resources": [r.to_json() for r in self.resources],
        }


@dataclass(frozen=True, slots=True)
class GroupResources:
    """The fixture and runtime bundles, shared by both variants."""

    fixture: ResourceSnapshot | None
    bundles: tuple[BundleSnapshot, ...]

    def runtime_json(self, group: Group) -> RuntimeRecord:
        """The runtime record: declared profile plus bundle snapshots (never inherited values)."""
        runtime = group.effective_runtime
        return {
            "host": runtime.host,
            "prompt": runtime.prompt,
            "session": runtime.session,
            "environment": {
                "literal": dict(runtime.environment.literal),
                "inherit": list(runtime.environment.inherit),
            },
            "extensions": [b.to_json() for b in self.bundles],
        }


def prepare_group(group: Group, root: Path, group_dir: Path) -> GroupResources:
    """Snapshot the fixture and bundles from the definition root's working tree, once."""
    resources = group_dir / layout.RESOURCES
    fixture = None
    if group.fixture is not None:
        fixture = snapshot_resource(
            root, WORKING_TREE, group.fixture, resources / "fixture", "fixture"
        )
    bundles = []
    runtime_dir = resources / "runtime" / "extensions"
    runtime_dir.mkdir(parents=True, exist_ok=True)
    for index, bundle in enumerate(group.effective_runtime.extensions):
        bundle_root = runtime_dir / str(index)
        snaps = tuple(
            snapshot_resource(root, WORKING_TREE, declared, bundle_root / declared, "bundle")
            for declared in bundle.resources
        )
        entry = (bundle_root / bundle.entry).resolve()
        if not entry.is_file() or not any(entry.is_relative_to(s.path) for s in snaps):
            raise ResourceError(
                f"runtime bundle entry {bundle.entry} must be a file inside one of its "
                f"declared resources {list(bundle.resources)}"
            )
        bundles.append(BundleSnapshot(index, bundle.entry, bundle_root.resolve(), snaps))
    return GroupResources(fixture, tuple(bundles))


@dataclass(frozen=True, slots=True)
class PreparedVariant:
    """Everything one variant's subject sees, materialised under its variant directory."""

    variant: str
    directory: Path
    workspace: Path
    source: ResolvedSource
    skills: tuple[ResourceSnapshot, ...]
    context: tuple[ResourceSnapshot, ...]
    bundle_entries: tuple[Path, ...]
    bundle_roots: tuple[Path, ...]
    bundle_snapshots: tuple[ResourceSnapshot, ...]
    context_manifest: Path | None
    context_delivery: ContextDelivery
    target_path: Path | None
    session_dir: Path | None
    before: Fingerprint

    def placeholders(self) -> dict[str, str]:
        """Absolute paths that differ between runs, by placeholder name."""
        values = {"workspace": str(self.workspace)}
        values |= {f"skill:{i}": str(s.path) for i, s in enumerate(self.skills)}
        values |= {f"context:{i}": str(c.path) for i, c in enumerate(self.context)}
        return values

    def allowed_roots(self) -> list[str]:
        """Where `read` may go: the workspace and every declared resource snapshot."""
        roots = [self.workspace, *(s.path for s in self.skills), *(c.path for c in self.context)]
        roots += [s.path for s in self.bundle_snapshots]
        return [str(r) for r in roots]


def skill_snapshot(resources: Path, index: int, declared: str) -> Path:
    """`resources/skills/<index>/<folder>`: a skill's snapshot keeps the name of its folder
    (a host checks a skill's `name` against it), under its index (two may share a name)."""
    return resources / "skills" / str(index) / (folder_name(declared) or "skill")


def prepare_variant(
    group: Group,
    variant: str,
    root: Path,
    variant_dir: Path,
    group_resources: GroupResources,
    resolver: SourceResolver,
) -> PreparedVariant:
    """Snapshot skills and context from the variant's source, copy bundles and the fixture."""
    environment = group.variants[variant]
    source = resolver.resolve(environment.source.kind, getattr(environment.source, "ref", None))
    resources = variant_dir / layout.RESOURCES
    skills = tuple(
        snapshot_resource(root, source, declared, skill_snapshot(resources, i, declared), "skill")
        for i, declared in enumerate(environment.skills)
    )
    context = tuple(
        snapshot_resource(root, source, declared, resources / "context" / str(i), "context")
        for i, declared in enumerate(environment.context)
    )
    manifest_path: Path | None = None
    delivery: ContextDelivery = {"kind": "none", "manifestPath": None, "sha256": None}
    manifest_file = resources / layout.CONTEXT_DELIVERY
    manifest_sha256 = write_json_once(manifest_file, context_manifest(context))
    if context:
        manifest_path = manifest_file.resolve()
        delivery = {
            "kind": "system-prompt",
            "manifestPath": str(manifest_path),
            "sha256": manifest_sha256,
        }
    entries: list[Path] = []
    roots: list[Path] = []
    bundle_snaps: list[ResourceSnapshot] = []
    for bundle in group_resources.bundles:
        copy_root = resources / "runtime" / "extensions" / str(bundle.index)
        copy_tree(bundle.root, copy_root)
        for snap in bundle.resources:
            copied = copy_root / snap.declared_path
            if fingerprint(copied) != snap.files:
                raise ResourceError(
                    f"runtime bundle resource {snap.declared_path} changed while being copied"
                )
            bundle_snaps.append(
                ResourceSnapshot(snap.declared_path, snap.source_path, copied.resolve(), snap.files)
            )
        entries.append((copy_root / bundle.entry).resolve())
        roots.append(copy_root.resolve())
    workspace = variant_dir / "workspace"
    if group_resources.fixture is not None:
        copied_files = copy_tree(group_resources.fixture.path, workspace)
        if copied_files != group_resources.fixture.files:
            raise ResourceError("the fixture snapshot changed while being copied to the workspace")
    else:
        workspace.mkdir(parents=True)
    workspace = workspace.resolve()
    session_dir = None
    if group.effective_runtime.session:
        session_dir = variant_dir / "session"
        session_dir.mkdir()
    target = environment.target
    target_path = None
    if target is not None:
        target_path = (skills[target].path / "SKILL.md").resolve()
    return PreparedVariant(
        variant=variant,
        directory=variant_dir,
        workspace=workspace,
        source=source,
        skills=skills,
        context=context,
        bundle_entries=tuple(entries),
        bundle_roots=tuple(roots),
        bundle_snapshots=tuple(bundle_snaps),
        context_manifest=manifest_path,
        context_delivery=delivery,
        target_path=target_path,
        session_dir=session_dir,
        before=fingerprint(workspace),
    )


def resources_json(
    prepared: PreparedVariant, group_resources: GroupResources, group: Group
) -> RunResources:
    """The `resources` record of run.json."""
    fixture = group_resources.fixture
    return {
        "fixture": None
        if fixture is None
        else {**fixture.to_json(), "materializedPath": str(prepared.workspace)},
        "source": prepared.source.to_json(),
        "skills": [s.to_json() for s in prepared.skills],
        "context": [c.to_json() for c in prepared.context],
        "runtime": group_resources.runtime_json(group),
        "contextDelivery": prepared.context_delivery,
        "targetPath": str(prepared.target_path) if prepared.target_path else None,
    }


def immutable_changes(prepared: PreparedVariant) -> list[str]:
    """Re-fingerprint every snapshot the subject must not change; messages for each change."""
    problems = []
    for snap in (*prepared.skills, *prepared.context, *prepared.bundle_snapshots):
        message = verify_unchanged(snap)
        if message:
            problems.append(message)
    manifest = prepared.context_manifest
    if manifest is not None and sha256_file(manifest) != prepared.context_delivery["sha256"]:
        problems.append("the context delivery manifest changed during the run")
    return problems
