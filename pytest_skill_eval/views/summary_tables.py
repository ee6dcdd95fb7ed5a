"""The tables of the Markdown summary, each row a list of plain-text cells.

`summary.py` renders every cell through `gfm.md_text`; nothing here writes Markdown. Numbers are
rounded as the terminal rounds them (rates and intervals to two decimals), and each table keeps
to what a reviewer decides on: one row per comparison with both states, its transition and its
interval; the cross-host rows of comparisons and of the checks that differ between hosts; the
checks that did not pass; one usage row per group. The HTML report keeps the full tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analysis import noise_floor
from ..evidence import layout, read
from .hosts import CrossHostGroup, aggregate_cross_host, cross_host_groups
from .present import rate_of
from .usage import LABELS, TERMINAL_FACTS, fact_changes, label_of, result_usage

COMPARISON_HEADER = ("group", "comparison", "baseline", "candidate", "transition", "95% CI")
CHECK_HEADER = ("group", "variant", "check", "kind", "state")
USAGE_HEADER = ("group", *(LABELS[name] for name in TERMINAL_FACTS))
Row = tuple[str, ...]


def graded(result_dir: Path) -> list[tuple[str, list[Mapping[str, Any]], list[Mapping[str, Any]]]]:
    """Each group's label, its graded checks and its comparisons (empty when ungraded)."""
    found = []
    for record in read.group_records(result_dir):
        grade: Mapping[str, Any] = (
            read.read_grade(layout.record_dir(result_dir, record), record) or {}
        )
        checks = [c for c in grade.get("checks") or [] if isinstance(c, Mapping)]
        comparisons = [c for c in grade.get("comparisons") or [] if isinstance(c, Mapping)]
        found.append((label_of(record), checks, comparisons))
    return found


def result_comparisons(result_dir: Path) -> list[Row]:
    """One row per comparison of a result: both checks' states and the transition."""
    rows: list[Row] = []
    for label, _checks, comparisons in graded(result_dir):
        for c in comparisons:
            base, cand = read.mapping(c.get("baseline")), read.mapping(c.get("candidate"))
            states = (str(base.get("state")), str(cand.get("state")))
            rows.append((label, str(c.get("id")), *states, str(c.get("transition")), "-"))
    return rows


def aggregate_comparisons(data: Mapping[str, Any]) -> list[Row]:
    """One row per comparison of an aggregate: passes per arm, the discordant pairs, and each
    arm's 95% Wilson interval."""
    rows: list[Row] = []
    for group in data.get("groups") or []:
        if not isinstance(group, Mapping):
            continue
        for c in group.get("comparisons") or []:
            if not isinstance(c, Mapping):
                continue
            rates = read.mapping(c.get("rates"))
            arms = [
                rate_of(read.mapping(c.get(arm)), read.mapping(rates.get(arm)))
                for arm in ("baseline", "candidate")
            ]
            discordant = read.mapping(c.get("discordant"))
            transition = (
                f"{discordant.get('pass-to-fail', 0)} pass-to-fail, "
                f"{discordant.get('fail-to-pass', 0)} fail-to-pass"
            )
            shown = [f"{a.passes}/{a.total} pass" for a in arms]
            span = " → ".join(interval_text(a.interval) for a in arms)
            rows.append((label_of(group), str(c.get("id")), *shown, transition, span))
    return rows


def interval_text(interval: Sequence[float] | None) -> str:
    """`[0.76, 1.00]`, as the terminal shows an interval."""
    return "unavailable" if interval is None else f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def cross_host(target: Path, data: Mapping[str, Any] | None) -> tuple[list[str], list[Row]]:
    """The hosts, and per group on several hosts its comparisons and the checks that differ
    between hosts, one cell per host and whether it held; ([], []) without such a group."""
    groups: list[CrossHostGroup] = (
        aggregate_cross_host(data) if data is not None else cross_host_groups(target)
    )
    hosts: list[str] = []
    for group in groups:
        hosts.extend(h for h in group.hosts if h not in hosts)
    rows = [
        (
            group.id,
            f"{row.kind} {row.id}",
            *(row.states.get(h, "-") for h in hosts),
            "held" if row.held else "differs",
        )
        for group in groups
        for row in group.rows
        if row.kind == "comparison" or not row.held or row.not_intact
    ]
    return hosts, rows


def open_checks(target: Path, data: Mapping[str, Any] | None) -> tuple[int, list[Row]]:
    """How many checks there are, and one row per check that did not pass (in every trial)."""
    if data is None:
        flaky = set(noise_floor.recorded_flaky(target))
    else:
        floor = data.get("noiseFloor")
        flaky = set(noise_floor.flaky_keys(floor)) if isinstance(floor, Mapping) else set()
    total, rows = 0, list[Row]()
    for label, check in _checks(target, data):
        total += 1
        if data is not None:
            rate = rate_of(check)
            if rate.passes == rate.total:
                continue
            state = f"{rate.passes}/{rate.total} pass, 95% CI {interval_text(rate.interval)}"
        else:
            state = str(check.get("state"))
            if state == "pass":
                continue
        if noise_floor.check_key(label, str(check.get("id"))) in flaky:
            state += " (flaky: does not gate)" if data is None else "; flaky"
        variant, kind = str(check.get("variant")), str(check.get("kind"))
        rows.append((label, variant, str(check.get("id")), kind, state))
    return total, rows


def _checks(target: Path, data: Mapping[str, Any] | None) -> list[tuple[str, Mapping[str, Any]]]:
    if data is None:
        return [(label, c) for label, checks, _ in graded(target) for c in checks]
    return [
        (label_of(group), check)
        for group in data.get("groups") or []
        if isinstance(group, Mapping)
        for check in group.get("checks") or []
        if isinstance(check, Mapping)
    ]


def usage(target: Path, groups: Any, aggregate: bool) -> tuple[bool, list[Row]]:
    """Whether any cost was simulated, and per group the facts the terminal shows, each as
    `baseline→candidate (xratio)` of the arms' means."""
    simulated, rows = False, []
    for group in groups:
        if not isinstance(group, Mapping):
            continue
        found = group.get("usage") if aggregate else result_usage(target, group)
        if not isinstance(found, Mapping):
            continue
        simulated = simulated or bool(found.get("simulated"))
        changes = fact_changes(found)
        rows.append((label_of(group), *(changes.get(name, "-") for name in TERMINAL_FACTS)))
    return simulated, rows


def hosts_of(groups: Any) -> dict[str, list[str]]:
    """Per group id, the hosts it ran on, in the order of the records."""
    found: dict[str, list[str]] = {}
    for group in groups or []:
        if isinstance(group, Mapping):
            found.setdefault(str(group.get("id")), []).append(layout.record_host(group))
    return found


def merge_hosts(rows: Sequence[Row], hosts: Mapping[str, Sequence[str]]) -> list[Row]:
    """Rows alike on several hosts of a group as one: `id (all 5 hosts)` when every host the
    group ran on agrees, `id on codex, pi` for some; a group on one host keeps its label."""
    merged: dict[tuple[str, Row], list[str]] = {}
    for row in rows:
        group_id, host = layout.split_group_dir_name(row[0])
        merged.setdefault((group_id, tuple(row[1:])), []).append(host)
    out = []
    for (group_id, rest), seen in merged.items():
        ran = hosts.get(group_id, seen)
        if len(ran) == 1:
            label = layout.group_dir_name(group_id, seen[0])
        elif len(seen) == len(ran):
            label = f"{group_id} (all {len(ran)} hosts)"
        else:
            label = f"{group_id} on {', '.join(seen)}"
        out.append((label, *rest))
    return out
