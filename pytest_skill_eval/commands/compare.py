"""`skill-eval compare A B`: what changed between two results or aggregates of the same groups.

A and B are independent runs (two revisions, models or hosts), so each check's pass rate is
compared as two independent proportions: the difference B − A with Newcombe's hybrid score
interval and Fisher's exact test (see `stats.py`). Paired tests do not apply across runs.
Before any figure, A and B must differ only along the declared axis (hosts; per group model,
sources, the rest of `definition.json`): else a rate says nothing about the axis, and it is
refused even forced. --force only compares groups a side has no definition.json of.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.gate_option import margin_value
from ..analysis.stats import ALPHA
from ..common.wording import counted
from ..definitions import VARIANTS
from ..errors import SkillEvalError
from ..evidence import layout, read
from ..evidence.locate import resolve_result
from .compare_gate import FAIL_ON, gate_lines
from .compare_report import CheckRow, ComparisonRow, Counts, Report, Row, change, render

AXES = ("revision", "model", "host")
STATUS_ORDER = ("regression", "improvement", "no-change", "unresolved", "unavailable")


class CompareError(SkillEvalError):
    """Two results cannot be compared as asked (an unknown axis, a definition to check missing)."""


class AxisError(CompareError):
    """A and B differ beyond the compared axis: in host, model, revision or a definition."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class GroupCounts:
    """One group's counts on one side: each check's (variant, kind, counts) and each
    comparison's (kind, counts per variant, transition counts)."""

    checks: dict[str, tuple[str, str, Counts]] = field(default_factory=dict)
    comparisons: dict[str, tuple[str, dict[str, Counts], dict[str, object]]] = field(
        default_factory=dict
    )


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a comparison: a result (one trial) or an aggregate, read as counts."""

    path: Path
    id: str
    kind: str
    groups: dict[str, GroupCounts]
    group_dirs: dict[str, Path]
    """Group id to a group directory holding its definition record (the first trial's)."""
    hosts: tuple[str, ...] = ()
    """The hosts the side's groups ran on, sorted."""


def arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Declare `skill-eval compare` on its `parser`."""
    parser.add_argument("a", help="the earlier result or aggregate (id or directory)")
    parser.add_argument("b", help="the later result or aggregate (id or directory)")
    parser.add_argument(
        "--axis",
        choices=AXES,
        default="revision",
        help="the one thing allowed to differ between A and B (default: revision); A and B "
        "differing in another of revision, model, host or the rest of a group's definition "
        "are refused (exit 2)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"compare even when a group's {layout.DEFINITION} is missing on a side, so the groups "
        "cannot be checked; A and B differing beyond --axis are refused all the same",
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default=None,
        help="exit 1 when B regresses: regression (any row whose status is regression), "
        "significant-regression (a one-sided Fisher test of B's rate below A's, Holm across "
        "all rows at --alpha), no-harm (unless every row shows B's rate is not lower than A's "
        "by --margin or more, at --alpha)",
    )
    parser.add_argument(
        "--margin",
        metavar="D",
        help="with --fail-on no-harm: the most B's pass rate may fall below A's, such as 0.1",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=ALPHA,
        help="error rate of --fail-on significant-regression (family-wise) or no-harm "
        f"(default {ALPHA})",
    )


def run(args: argparse.Namespace, root: Path) -> int:
    """Run `skill-eval compare`: the report on stdout; a refusal is raised as a CompareError.

    With --fail-on, a regression under its rule exits 1, one line per row on stderr.
    """
    margin = margin_value(args.margin, str(args.fail_on), "--margin")
    a, b = (resolve_result(side, root) for side in (args.a, args.b))
    report = compare(a, b, axis=args.axis, force=args.force)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render(report))
    if args.fail_on is None:
        return 0
    if not 0 < args.alpha < 1:
        raise CompareError(f"--alpha {args.alpha} is not accepted; use a number between 0 and 1")
    failing = gate_lines(report, args.fail_on, args.alpha, margin)
    for line in failing:
        sys.stderr.write(f"skill-eval: {line}\n")
    return 1 if failing else 0


# ---------------------------------------------------------------------------------------------
# Reading both sides


def load_side(path: Path) -> Side:
    """Counts per group, check and comparison of a result or an aggregate directory."""
    if read.is_aggregate(path):
        data = read.load_aggregate(path)
        groups: dict[str, GroupCounts] = {}
        for group in data.get("groups") or []:
            entry = groups.setdefault(str(group.get("id")), GroupCounts())
            for check in group.get("checks") or []:
                entry.checks[str(check.get("id"))] = (
                    str(check.get("variant")),
                    str(check.get("kind")),
                    _counts(check),
                )
            for comparison in group.get("comparisons") or []:
                entry.comparisons[str(comparison.get("id"))] = _comparison_entry(comparison)
        trials = [t for t in read.aggregate_trial_dirs(path) if t.is_dir()]
        dirs = {}
        for identity in groups:
            for trial in trials:
                candidate = layout.group_dir(trial, identity)
                if (candidate / layout.DEFINITION).is_file():
                    dirs[identity] = candidate
                    break
        hosts = {layout.record_host(g) for g in data.get("groups") or [] if isinstance(g, dict)}
        identity = str(data.get("id") or path.name)
        return Side(path, identity, "aggregate", groups, dirs, tuple(sorted(hosts)))
    summary = read.load_summary(path)
    groups, dirs = {}, {}
    for record in read.select_groups(summary, None):
        evidence = read.load_group(path, record)
        entry = groups.setdefault(evidence.id, GroupCounts())
        dirs[evidence.id] = evidence.directory
        grade = evidence.grade or {}
        for check in grade.get("checks") or []:
            state = check.get("state")
            entry.checks[str(check.get("id"))] = (
                str(check.get("variant")),
                str(check.get("kind")),
                Counts(int(state == "pass"), int(state == "fail"), int(state == "unavailable")),
            )
        for comparison in grade.get("comparisons") or []:
            sides = {v: read.mapping(comparison.get(v)).get("state") for v in VARIANTS}
            entry.comparisons[str(comparison.get("id"))] = (
                str(comparison.get("kind")),
                {
                    v: Counts(int(s == "pass"), int(s == "fail"), int(s == "unavailable"))
                    for v, s in sides.items()
                },
                {str(comparison.get("transition")): 1},
            )
    hosts = {layout.record_host(record) for record in read.select_groups(summary, None)}
    identity = str(summary.get("id") or path.name)
    return Side(path, identity, "result", groups, dirs, tuple(sorted(hosts)))


def _counts(data: Mapping[str, Any]) -> Counts:
    return Counts(
        int(data.get("pass") or 0), int(data.get("fail") or 0), int(data.get("unavailable") or 0)
    )


def _comparison_entry(
    comparison: Mapping[str, Any],
) -> tuple[str, dict[str, Counts], dict[str, object]]:
    transitions = {k: v for k, v in read.mapping(comparison.get("transitions")).items() if v}
    return (
        str(comparison.get("kind")),
        {v: _counts(read.mapping(comparison.get(v))) for v in VARIANTS},
        transitions,
    )


# ---------------------------------------------------------------------------------------------
# Axes: only the compared one may differ


def axis_values(definition: Mapping[str, Any]) -> dict[str, object]:
    """What each axis reads in a group definition, by axis: the variants' sources (by variant),
    the model, the runtime's host."""
    variants = read.mapping(definition.get("variants"))
    return {
        "revision": {name: read.mapping(v).get("source") for name, v in variants.items()},
        "model": definition.get("model"),
        "host": read.mapping(definition.get("runtime")).get("host"),
    }


def without_axes(definition: Mapping[str, Any]) -> dict[str, object]:
    """A group definition with every axis's fields removed: what no comparison may change."""
    stripped: dict[str, object] = copy.deepcopy(dict(definition))
    for variant in read.mapping(stripped.get("variants")).values():
        if isinstance(variant, dict):
            variant.pop("source", None)
    stripped.pop("model", None)
    runtime = stripped.get("runtime")
    if isinstance(runtime, dict):
        runtime.pop("host", None)
        if not runtime:
            stripped.pop("runtime")
    return stripped


def differing_fields(a: Any, b: Any, at: str = "") -> Iterator[str]:
    """Dotted paths at which two JSON values differ (a whole subtree once)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in list(a) + [k for k in b if k not in a]:
            yield from differing_fields(a.get(key), b.get(key), f"{at}.{key}" if at else key)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from differing_fields(x, y, f"{at}[{index}]")
    elif a != b:
        yield at or "(whole definition)"


def _shown(value: Any) -> str:
    """An axis value as the refusal names it: a model's id, else compact JSON, else unset."""
    if isinstance(value, Mapping) and isinstance(value.get("model"), str):
        return str(value["model"])
    if value is None:
        return "unset"
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _refusal(other: str, values: tuple[str, str], where: str, axis: str) -> AxisError:
    return AxisError(
        f"compare: A and B differ in {other} ({values[0]} vs {values[1]}){where}, not only in "
        f"{axis}: compare results that differ in one axis, or pass --axis {other}"
    )


def _fingerprints(
    identity: str, definitions: list[Mapping[str, Any]], dirs: list[Path]
) -> tuple[str, str]:
    """A group's definition sha256 on each side, as its invocation.json recorded it; when those
    do not tell the sides apart (an option changed the saved definition), the sha256 of each
    definition.json without the axes' fields, so the two values named always differ."""
    recorded = []
    for directory in dirs:
        invocation = read.optional_json(directory.parent.parent / layout.INVOCATION)
        found = [
            str(group.get("sha256"))
            for entry in read.mapping(invocation).get("definitions") or []
            for group in read.mapping(entry).get("groups") or []
            if isinstance(group, Mapping) and group.get("id") == identity and group.get("sha256")
        ]
        recorded.append(found[0] if found else None)
    if None in recorded or recorded[0] == recorded[1]:
        recorded = [
            hashlib.sha256(json.dumps(without_axes(d), sort_keys=True).encode()).hexdigest()
            for d in definitions
        ]
    return f"sha256:{str(recorded[0])[:12]}", f"sha256:{str(recorded[1])[:12]}"


def check_axes(a: Side, b: Side, axis: str) -> list[str]:
    """Refuse (AxisError) when A and B differ beyond `axis`: hosts, then per shared group its
    definition's axes and rest. A line per group a side has no definition.json of (unchecked)."""
    if axis != "host" and a.hosts != b.hosts:
        hosts = (", ".join(a.hosts) or "none", ", ".join(b.hosts) or "none")
        raise _refusal("host", hosts, "", axis)
    unchecked = []
    for identity in (g for g in a.groups if g in b.groups):
        definitions, dirs = [], []
        for side in (a, b):
            directory = side.group_dirs.get(identity)
            found = read.optional_json(directory / layout.DEFINITION) if directory else None
            if not isinstance(found, Mapping) or directory is None:
                where = directory or side.path
                unchecked.append(f"group {identity}: {where}: {layout.DEFINITION} is missing")
                break
            definitions.append(found)
            dirs.append(directory)
        else:
            _check_group(identity, definitions, dirs, axis)
    return unchecked


def _check_group(
    identity: str, definitions: list[Mapping[str, Any]], dirs: list[Path], axis: str
) -> None:
    """Refuse when one group's two definitions differ beyond `axis`."""
    values = [axis_values(d) for d in definitions]
    files = f"{dirs[0] / layout.DEFINITION} vs {dirs[1] / layout.DEFINITION}"
    for other in ("host", "model", "revision"):
        first, second = values[0][other], values[1][other]
        if other == axis or first == second:
            continue
        if other == "revision":
            field = next(differing_fields(first, second))
            variant = field.split(".")[0]
            sources = (read.mapping(first), read.mapping(second))
            shown = (_shown(sources[0].get(variant)), _shown(sources[1].get(variant)))
            where = f" in group {identity}'s variants.{variant}.source ({files})"
        else:
            shown, where = (_shown(first), _shown(second)), f" in group {identity} ({files})"
        raise _refusal(other, shown, where, axis)
    fields = list(differing_fields(without_axes(definitions[0]), without_axes(definitions[1])))
    if fields:
        prints = _fingerprints(identity, definitions, dirs)
        raise AxisError(
            f"compare: A and B differ in the definition of group {identity} "
            f"({prints[0]} vs {prints[1]}; {', '.join(fields)}; {files}), not only in {axis}: "
            "use results run from the same group definitions, differing in one axis"
        )


# ---------------------------------------------------------------------------------------------
# The comparison


def compare(a_dir: Path, b_dir: Path, *, axis: str, force: bool = False) -> Report:
    """The report of B against A: both sides, refusals overridden, rows (regressions first)."""
    if axis not in AXES:
        raise CompareError(f"unknown axis {axis!r} (use {', '.join(AXES)})")
    a, b = load_side(a_dir), load_side(b_dir)
    differences = check_axes(a, b, axis)
    if differences and not force:
        raise CompareError(
            f"compare: {differences[0]}"
            + (f" (and {counted(len(differences) - 1, 'more group')})" if differences[1:] else "")
            + ", so A and B cannot be checked for differences beyond the axis; use results "
            "whose definitions are all present, or pass --force to compare anyway"
        )
    rows: list[Row] = []
    for identity in (g for g in a.groups if g in b.groups):
        ga, gb = a.groups[identity], b.groups[identity]
        for check_id in (c for c in ga.checks if c in gb.checks):
            variant, kind, counts_a = ga.checks[check_id]
            counts_b = gb.checks[check_id][2]
            check: CheckRow = {
                "type": "check",
                "group": identity,
                "id": check_id,
                "variant": variant,
                "kind": kind,
                **change(counts_a, counts_b),
            }
            rows.append(check)
        for comparison_id in (c for c in ga.comparisons if c in gb.comparisons):
            kind, sides_a, transitions_a = ga.comparisons[comparison_id]
            sides_b, transitions_b = gb.comparisons[comparison_id][1:]
            for variant in VARIANTS:
                side: ComparisonRow = {
                    "type": "comparison",
                    "group": identity,
                    "id": comparison_id,
                    "variant": variant,
                    "kind": kind,
                    **change(sides_a[variant], sides_b[variant]),
                    "transitions": {"a": transitions_a, "b": transitions_b},
                }
                rows.append(side)
    rows.sort(key=lambda r: r["status"] != "regression")  # stable: suite order otherwise
    only = {
        "a": [g for g in a.groups if g not in b.groups],
        "b": [g for g in b.groups if g not in a.groups],
    }
    return {
        "schema_version": 1,
        "kind": "comparison",
        "axis": axis,
        "forced": bool(differences) and force,
        "a": {"id": a.id, "kind": a.kind, "path": str(a.path)},
        "b": {"id": b.id, "kind": b.kind, "path": str(b.path)},
        "definitionDifferences": differences,
        "onlyIn": only,
        "regressions": sum(1 for r in rows if r["status"] == "regression"),
        "rows": rows,
    }
