"""`skill-eval plan`: pin an invocation up front so N machines can run parts of it.

A plan holds what the controller of a single-machine run computes before any group starts —
result ids, definition and resource fingerprints, resolved Git commits, selection, provider
mode — and the ordered work units (group × trial) that shards split between them. Paths are
recorded relative to the definition root, so each machine may hold its own copy of the root.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ..definitions import (
    VARIANTS,
    DefinitionError,
    LoadedDefinition,
    LoadedGroup,
    SelectionError,
    load_definition,
    select,
)
from ..errors import SkillEvalError
from ..evidence import (
    layout,
    new_result_id,
    read_json,
    sha256_file,
    utc_now,
    write_json_once,
)
from ..evidence.records import InvocationRecord
from ..hosts import check_environment
from ..hosts.registry import registered
from ..run.inputs import resource_digest
from ..workspace import ResourceError, SourceResolver

if TYPE_CHECKING:
    from .models import PlanModel, PlannedGroup

PLAN_KIND = "plan"


class PlanError(SkillEvalError):
    """A plan cannot be made, read, or followed (a definition differs from what it pinned)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Unit:
    """One work unit: one group of one trial, its selected variants run together."""

    group: str
    trial: int
    position: int
    variants: tuple[str, ...]
    # What the group took in the newest earlier result, when there was one (balances shards).
    seconds: float | None = None
    # The hosts the group runs on, all in this unit (declared, or chosen when planning).
    hosts: tuple[str, ...] = (layout.DEFAULT_HOST,)

    @property
    def key(self) -> str:
        """`group@trial`, unique in a plan."""
        return f"{self.group}@{self.trial}"

    @property
    def directories(self) -> tuple[tuple[str, str], ...]:
        """`(host, result group directory name)` of each host the unit runs on."""
        return tuple((host, layout.group_dir_name(self.group, host)) for host in self.hosts)


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    """A loaded plan file, as its description (`scale/models.py`) validated it."""

    path: Path
    model: PlanModel
    sha256: str

    @property
    def id(self) -> str:
        """The plan's id (also names shard directories)."""
        return self.model.id

    @property
    def trials(self) -> int:
        """How many trials (results) the plan makes."""
        return self.model.selection.trials

    @property
    def hosts(self) -> tuple[str, ...]:
        """The hosts the plan chose for every group (`--host`); empty: each its declared one."""
        return tuple(self.model.selection.hosts or ())

    def result_id(self, trial: int) -> str:
        """The pinned result id of a trial."""
        return self.model.results[trial - 1].id

    def units(self) -> list[Unit]:
        """Every work unit, in plan order (trial, then suite order)."""
        return [
            Unit(
                u.group,
                u.trial,
                u.position,
                tuple(u.variants),
                u.seconds,
                tuple(u.hosts or (layout.DEFAULT_HOST,)),
            )
            for u in self.model.units
        ]

    def group_entry(self, group_id: str) -> PlannedGroup:
        """`{definition, sha256, resources, path}` of a planned group."""
        return self.model.groups[group_id]


class Pinned(TypedDict):
    """The settings a plan pins, by `Settings` field."""

    trials: int
    group_selectors: tuple[str, ...]
    variant_selector: str | None
    fail_on: str
    record: str
    max_cost: float | None
    hosts: tuple[str, ...]


def _definition_entry(loaded: LoadedDefinition, root: Path) -> dict[str, Any]:
    """A definition file of the plan, and the groups it holds."""
    return {
        "path": _relative(loaded.path, root),
        "kind": loaded.kind,
        "id": loaded.id,
        "groups": [
            {
                "id": g.group.id,
                "position": g.position,
                "path": _relative(g.path, root),
                "sha256": g.sha256,
            }
            for g in loaded.groups
        ],
    }


def _group_entry(g: LoadedGroup, root: Path, resolver: SourceResolver) -> dict[str, Any]:
    """A planned group: where it is, its definition and resources, its Git sources pinned."""
    for env in g.group.variants.values():
        if env.source.kind == "git":
            try:
                resolver.resolve("git", env.source.ref)
            except ResourceError as error:
                raise PlanError(f"group {g.group.id!r}: {error}") from None
    return {
        "path": _relative(g.path, root),
        "position": g.position,
        "sha256": g.sha256,
        "resources": resource_fingerprint(g, root),
        "definition": g.raw,
    }


def _cannot_run(chosen: Sequence[LoadedGroup], hosts: Sequence[str]) -> list[dict[str, str]]:
    """Each chosen group a chosen host cannot run, and why."""
    return [
        {"group": g.group.id, "host": host, "reason": reason}
        for g in chosen
        for host in hosts
        if (reason := g.group.cannot_run(host)) is not None
    ]


def make_plan(
    paths: Sequence[Path],
    root: Path,
    *,
    trials: int = 1,
    group: str | None = None,
    variant: str | None = None,
    cassettes: Path | None = None,
    record: str = "none",
    fail_on: str = "infrastructure",
    max_cost: float | None = None,
    durations: Mapping[str, float] | None = None,
    hosts: Sequence[str] = (),
) -> dict[str, Any]:
    """The plan of an invocation of `paths` under `root` (definitions loaded and checked here).

    `durations` (seconds per group id, from earlier results) are pinned per unit so that every
    shard balances the same way. `hosts` (the invocation's `--skill-eval-host` choice) replace
    each group's declared host; each unit names the hosts its group runs on.
    """
    root = root.resolve()
    resolver = SourceResolver(root)
    definitions: list[dict[str, Any]] = []
    groups: dict[str, dict[str, Any]] = {}
    chosen: list[tuple[LoadedGroup, tuple[str, ...]]] = []
    for path in paths:
        try:
            loaded = load_definition(path.resolve(), root, registered())
            selection = select(loaded, group, variant)
        except (DefinitionError, SelectionError) as error:
            raise PlanError(str(error)) from None
        definitions.append(_definition_entry(loaded, root))
        for picked in selection:
            g = picked.loaded
            if g.group.id in groups:
                raise PlanError(f"group id {g.group.id!r} appears twice; result groups need one")
            groups[g.group.id] = _group_entry(g, root, resolver)
            chosen.append((g, tuple(v for v in VARIANTS if picked.variants[v])))
    on = {g.group.id: _hosts_of(g, hosts) for g, _ in chosen}
    units = [
        {
            "group": g.group.id,
            "trial": trial,
            "position": g.position,
            "variants": list(vs),
            "seconds": (durations or {}).get(g.group.id),
            "hosts": list(on[g.group.id]),
        }
        for trial in range(1, trials + 1)
        for g, vs in chosen
        if on[g.group.id]
    ]
    return {
        "schema_version": 1,
        "kind": PLAN_KIND,
        "id": new_result_id(),
        "root": str(root),
        "definitions": definitions,
        "groups": groups,
        "selection": {
            "group": group,
            "variant": variant,
            "trials": trials,
            "hosts": list(hosts) or None,
        },
        "pins": resolver.pinned(),
        "provider": {
            "cassettes": _relative(cassettes.resolve(), root) if cassettes else None,
            "record": record,
            "mode": ("record" if record != "none" else "replay") if cassettes else "live",
        },
        "failOn": fail_on,
        "maxCost": max_cost,
        "results": [{"trial": t, "id": new_result_id()} for t in range(1, trials + 1)],
        "aggregate": new_result_id() if trials > 1 else None,
        "units": units,
        "cannotRun": _cannot_run([g for g, _ in chosen], hosts),
        "createdAt": utc_now(),
    }


def _hosts_of(loaded: LoadedGroup, hosts: Sequence[str]) -> tuple[str, ...]:
    """The hosts a planned group runs on: the chosen ones that can run it (on the others its
    items are skips, with no unit), else its declared host; one whose isolation the group's
    environment names is the definition's error."""
    if not hosts:
        on: tuple[str, ...] = (loaded.group.effective_runtime.host,)
    else:
        on = tuple(host for host in hosts if loaded.group.cannot_run(host) is None)
    for host in on:
        try:
            check_environment(loaded.path, loaded.group, host, chosen=bool(hosts))
        except DefinitionError as error:
            raise PlanError(str(error)) from None
    return on


def write_plan(plan: Mapping[str, Any], out: Path) -> Path:
    """Write a plan once (a plan is never rewritten: shards already follow it)."""
    write_json_once(out, plan)
    return out


def load_plan(path: Path) -> Plan:
    """Read a plan file; anything that is not one is a PlanError naming the file."""
    if not path.is_file():
        raise PlanError(
            f"cannot read plan {path}: no such file; pass the file `skill-eval plan -o PLAN` wrote"
        )
    # A damaged plan file is the reader's one line (exit status 2), like any damaged evidence.
    data = read_json(path)
    try:
        digest = sha256_file(path)
    except OSError as error:
        raise PlanError(
            f"cannot read plan {path}: {error.strerror or error}; pass the file "
            "`skill-eval plan -o PLAN` wrote"
        ) from None
    if not isinstance(data, dict) or data.get("kind") != PLAN_KIND:
        raise PlanError(f"{path} is not a plan (make one with `skill-eval plan`)")
    if data.get("schema_version") != 1:
        raise PlanError(f"{path}: unsupported plan schema_version {data.get('schema_version')!r}")
    from .models import parse_plan  # its pydantic models are built only by runs with a plan

    model, problem = parse_plan(data, path)
    if model is None:
        raise PlanError(f"{problem}; the plan is damaged: make a new one with `skill-eval plan`")
    return Plan(path, model, digest)


def adopt_plan(
    path: Path,
    given: Mapping[str, Any],
    hosts: tuple[str, ...],
    max_cost: float | None,
    shards: int,
) -> Pinned:
    """The settings the plan at `path` pins (trials, selection, hosts, ceiling), by `Settings`
    field; an option `given` (or `hosts`) that contradicts it refuses.

    A ceiling given here (`max_cost`), or pinned by the plan, is the whole run's: each of
    `shards` gets ceiling / `shards` (1 when a Redis ledger binds every shard together).
    """
    plan = load_plan(path)
    selection = plan.model.selection
    pinned: dict[str, object] = {
        "trials": plan.trials,
        "group": selection.group,
        "variant": selection.variant,
        "fail-on": plan.model.failOn,
        "record": plan.model.provider.record,
    }
    for name, value in given.items():
        if str(value) != str(pinned[name]):
            raise PlanError(
                f"--skill-eval-{name} {value} contradicts the plan {plan.path}, which pins "
                f"{pinned[name]!r}; drop the option or make a new plan"
            )
    planned_hosts = plan.hosts
    if hosts and hosts != planned_hosts:
        raise PlanError(
            f"--skill-eval-host {' '.join(hosts)} contradicts the plan {plan.path}, "
            f"which pins {' '.join(planned_hosts) or 'each group its declared host'}; drop the "
            "option (or the skill_eval_hosts ini key) or make a new plan with --host"
        )
    ceiling = max_cost if max_cost is not None else plan.model.maxCost
    return {
        "trials": plan.trials,
        "group_selectors": (selection.group,) if selection.group is not None else (),
        "variant_selector": selection.variant,
        "fail_on": plan.model.failOn,
        "record": plan.model.provider.record,
        "max_cost": float(ceiling) / shards if ceiling is not None else None,
        "hosts": planned_hosts,
    }


def check_groups(plan: Plan, loaded: Iterable[LoadedGroup], root: Path) -> None:
    """Refuse to run a shard whose definitions or resources differ from what the plan pinned."""
    seen: set[str] = set()
    for group in loaded:
        entry = plan.model.groups.get(group.group.id)
        if entry is None:
            continue  # not selected by the plan: never collected into a unit
        seen.add(group.group.id)
        if group.sha256 != entry.sha256:
            raise PlanError(
                f"group {group.group.id!r}: its definition {group.path} (sha256 "
                f"{group.sha256[:12]}…) differs from the one the plan {plan.path} pinned "
                f"({entry.sha256[:12]}…); run every shard from the same definitions"
            )
        if resource_fingerprint(group, root) != entry.resources:
            raise PlanError(
                f"group {group.group.id!r}: its fixture, skills or context under {root} differ "
                f"from what the plan {plan.path} pinned; run every shard from the same files"
            )
    missing = sorted(set(plan.model.groups) - seen)
    if missing:
        raise PlanError(
            f"the plan {plan.path} has groups these definitions lack: {', '.join(missing)}"
        )


def resource_fingerprint(group: LoadedGroup, root: Path) -> str:
    """One sha256 over every working-tree file a group copies: fixture, skills, context, bundles.

    Git-sourced skills and context are pinned by commit instead.
    """
    g = group.group
    declared: set[str] = set()
    if g.fixture is not None:
        declared.add(g.fixture)
    for env in g.variants.values():
        if env.source.kind == "working-tree":
            declared.update(env.skills)
            declared.update(env.context)
    for bundle in g.effective_runtime.extensions:
        declared.update(bundle.resources)
    digests = {rel: resource_digest(root / rel) for rel in sorted(declared)}
    text = json.dumps(digests, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def invocation_record(
    plan: Plan, trial: int, root: Path | None = None, started_at: str | None = None
) -> InvocationRecord:
    """`invocation.json` of a planned trial, as a single-machine controller would write it."""
    base = root or Path(plan.model.root)
    provider = plan.model.provider
    cassettes = provider.cassettes
    selection = plan.model.selection
    record: InvocationRecord = {
        "schema_version": 1,
        "id": plan.result_id(trial),
        "root": str(base),
        "definitions": [
            {
                "path": str(base / d.path),
                "kind": d.kind,
                "id": d.id,
                "groups": [
                    {
                        "id": g.id,
                        "position": g.position,
                        "path": str(base / g.path),
                        "sha256": g.sha256,
                    }
                    for g in d.groups
                ],
            }
            for d in plan.model.definitions
        ],
        "selection": {
            "group": selection.group,
            "variant": selection.variant,
            "trial": trial,
            "trials": selection.trials,
        },
        "pins": plan.model.pins,
        "provider": {
            "cassettes": str(base / cassettes) if cassettes is not None else None,
            "record": provider.record,
        },
        "failOn": plan.model.failOn,
        "startedAt": started_at or utc_now(),
    }
    if selection.hosts:
        # As a single machine records hosts its invocation chose, and what they cannot run.
        record["hosts"] = list(selection.hosts)
        record["cannotRun"] = [
            {"group": f.group, "host": f.host, "reason": f.reason} for f in plan.model.cannotRun
        ]
    return record


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        raise PlanError(
            f"{path} is outside the definition root {root}; a plan records paths relative to "
            "the root so each machine can hold its own copy"
        ) from None
