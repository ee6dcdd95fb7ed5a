"""The cross-host table: per group run on several hosts, each check and comparison per host, and
whether the question held on every host (the same state everywhere). A host the invocation chose
that cannot run a group is a column of its own: `cannot run`, with the reason, never a state.

Built from the saved evidence only, so the terminal summary and `skill-eval view` agree. A result
whose groups each ran on one host has no table, so single-host output is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.offered import KNOWN_INTACT
from ..evidence import layout, read
from .offered import target_offered

ABSENT = "absent"
CANNOT_RUN = "cannot run"
OFFERED = "offered"  # a row's kind: how each host offered a variant's target skill


@dataclass(frozen=True, slots=True)
class CrossHostRow:
    """One check (its state) or comparison (its transition) of a group, on each host."""

    kind: str  # "check", "comparison" or "offered"
    id: str
    states: dict[str, str]  # host → state or transition (`absent` when that host has no grade)

    @property
    def held(self) -> bool:
        """The same state on every host that can run the group."""
        return len({s for s in self.states.values() if s != CANNOT_RUN}) <= 1

    @property
    def not_intact(self) -> bool:
        """An `offered` row where some host did not offer the target intact (in a result, the
        state; in an aggregate, trials per state: `intact=1 cut=1`)."""
        shown = [s for s in self.states.values() if s not in (CANNOT_RUN, ABSENT)]
        cells = [s.split() if "=" in s else [s] for s in shown]
        return self.kind == OFFERED and not all(
            part.startswith(KNOWN_INTACT) for cell in cells for part in cell
        )


@dataclass(frozen=True, slots=True)
class CrossHostGroup:
    """A group of one result that ran on more than one host."""

    id: str
    hosts: tuple[str, ...]
    rows: tuple[CrossHostRow, ...]
    cannot_run: dict[str, str] = field(default_factory=dict)  # host → why

    @property
    def held(self) -> bool:
        """Whether every check and comparison held on every host that can run the group."""
        return all(row.held for row in self.rows)

    @property
    def verdict(self) -> str:
        """`held on every host`, `differs between hosts`, qualified when a host cannot run it."""
        if not self.held:
            return "differs between hosts"
        return "held on every host that can run it" if self.cannot_run else "held on every host"


def cross_host_groups(result_dir: Path) -> list[CrossHostGroup]:
    """The groups of a result that ran on several hosts, in suite order, hosts Pi first."""
    by_group: dict[str, list[str]] = {}
    states: dict[tuple[str, str, str], dict[str, str]] = {}
    order: dict[str, list[tuple[str, str]]] = {}
    cannot: dict[str, dict[str, str]] = {}
    for fact in read.cannot_run_facts(read.load_invocation(result_dir)):
        cannot.setdefault(fact["group"], {})[fact["host"]] = fact["reason"]
    for record in read.group_records(result_dir):
        host = layout.record_host(record)
        by_group.setdefault(record["id"], []).append(host)
        grade = read.read_grade(layout.record_dir(result_dir, record), record)
        rows = order.setdefault(record["id"], [])
        checks = grade.get("checks", []) if grade else []
        comparisons = grade.get("comparisons", []) if grade else []
        entries = [("check", str(c["id"]), str(c["state"])) for c in checks] + [
            ("comparison", str(c["id"]), str(c["transition"])) for c in comparisons
        ]
        entries += _offered_entries(layout.record_dir(result_dir, record), record)
        for kind, identity, state in entries:
            key = (record["id"], kind, identity)
            if key not in states:
                states[key] = {}
                rows.append((kind, identity))
            states[key][host] = state
    groups = []
    for group_id, ran in by_group.items():
        reasons = cannot.get(group_id, {})
        hosts = [*ran, *reasons]
        if len(hosts) < 2:
            continue
        table = tuple(
            CrossHostRow(
                kind,
                identity,
                {h: CANNOT_RUN if h in reasons else cells.get(h, ABSENT) for h in hosts},
            )
            for kind, identity in order[group_id]
            for cells in [states[(group_id, kind, identity)]]
        )
        groups.append(CrossHostGroup(group_id, tuple(hosts), table, reasons))
    return groups


def _offered_entries(group_dir: Path, record: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """An `offered` row per variant with a target: how each host offered it to the model."""
    entries = []
    for variant in record.get("variants") or {}:
        found = read.read_run(group_dir / variant)
        offered = target_offered(group_dir / variant, found[1]) if found is not None else None
        if offered is not None:
            entries.append((OFFERED, f"{variant}-target {offered[0]}", offered[1]))
    return entries


def cross_host_lines(result_dir: Path, indent: str = "  ") -> list[str]:
    """The table as text lines (the terminal summary and the text view)."""
    return _lines(cross_host_groups(result_dir), indent)


def _lines(groups: list[CrossHostGroup], indent: str) -> list[str]:
    lines = []
    for group in groups:
        lines.append(f"{indent}cross-host {group.id} ({', '.join(group.hosts)}): {group.verdict}")
        for host, reason in group.cannot_run.items():
            lines.append(f"{indent}  {host} {CANNOT_RUN}: {reason}")
        for row in group.rows:
            cells = " ".join(
                f"{host}=[{state}]" if "=" in state or " " in state else f"{host}={state}"
                for host, state in row.states.items()
            )
            verdict = "held" if row.held else "differs"
            lines.append(f"{indent}  {row.kind} {row.id}: {cells} {verdict}")
    return lines


def aggregate_cross_host(data: Mapping[str, Any]) -> list[CrossHostGroup]:
    """The aggregate's recorded cross-host table, each host's counts as one cell."""
    groups = []
    for table in data.get("crossHost") or []:
        if not isinstance(table, Mapping):
            continue
        hosts = tuple(str(h) for h in table.get("hosts") or [])
        reasons = {str(h): str(r) for h, r in mapping_of(table.get("cannotRun")).items()}
        rows = tuple(
            CrossHostRow(
                str(row.get("kind")),
                str(row.get("id")),
                {
                    h: CANNOT_RUN
                    if h in reasons
                    else _counts_cell(mapping_of(row.get("hosts")).get(h))
                    for h in hosts
                },
            )
            for row in table.get("rows") or []
            if isinstance(row, Mapping)
        )
        groups.append(CrossHostGroup(str(table.get("id")), hosts, rows, reasons))
    return groups


def aggregate_cross_host_lines(data: Mapping[str, Any], indent: str = "  ") -> list[str]:
    """The aggregate's cross-host table as text lines."""
    return _lines(aggregate_cross_host(data), indent)


def _counts_cell(counts: Any) -> str:
    """`pass=2 fail=1` (zero counts left out); `absent` for a host without that row."""
    if not isinstance(counts, Mapping):
        return ABSENT
    shown = [f"{name}={count}" for name, count in counts.items() if count]
    return " ".join(shown) or "none"


def mapping_of(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
