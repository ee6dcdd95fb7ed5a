"""Per-arm usage as every view shows it: one row per fact, baseline | candidate | the change.

The facts come from `aggregate.json` (`analysis.usage`), or for one result from its run records;
means with their 95% interval across trials, the change paired by trial (or, when an arm was
reused, unpaired with Welch's interval, marked so), and the ratio. When an arm was reused or
retried, two more rows say what this invocation spent and what its earlier attempts cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.usage import FACTS, group_usage
from ..definitions import VARIANTS
from ..evidence import layout, read

# The facts' short names in views (the JSON keys stay camelCase).
LABELS = {
    "input": "tokens-in",
    "output": "tokens-out",
    "cached": "tokens-cached",
    "modelCalls": "model-calls",
    "turns": "turns",
    "toolCalls": "tool-calls",
    "wallTimeMs": "wall-ms",
    "costUsd": "cost-usd",
}


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One fact of one group: each arm's cell and the change's."""

    fact: str
    baseline: str
    candidate: str
    change: str


def _amount(value: float, fact: str, *, sign: bool = False) -> str:
    """A fact's value: USD to a millionth, counts whole (a mean to a tenth); `sign` shows +."""
    if fact == "costUsd":
        text = f"{abs(value):.6f}"
    elif float(value).is_integer():
        text = f"{abs(value):,.0f}"
    else:
        text = f"{abs(value):,.1f}"
    if value < 0 and text.strip("0.,"):
        return "-" + text
    return ("+" if sign else "") + text


def _interval(values: Any, fact: str, *, sign: bool = False) -> str:
    if not isinstance(values, list) or len(values) != 2:
        return ""
    low, high = (_amount(float(v), fact, sign=sign) for v in values)
    return f" (95% CI {low} to {high})"


def arm_cell(fact: Mapping[str, Any], name: str) -> str:
    """`mean (95% CI low to high)`; `unavailable` when no run reported it."""
    mean = fact.get("mean")
    if not isinstance(mean, int | float):
        return "unavailable"
    return _amount(float(mean), name) + _interval(fact.get("interval"), name)


def change_cell(change: Mapping[str, Any], name: str) -> str:
    """`+difference (95% CI …), ×ratio` over the paired trials; `unavailable` without pairs."""
    difference = change.get("difference")
    if not isinstance(difference, int | float):
        return "unavailable"
    text = _amount(float(difference), name, sign=True)
    text += _interval(change.get("interval"), name, sign=True)
    ratio = change.get("ratio")
    if isinstance(ratio, int | float):
        text += f", x{ratio:.2f}"
    if change.get("method") == UNPAIRED_METHOD:
        text += ", unpaired (Welch: an arm was reused)"
    return text


# `UsageChange.method` of a change computed over unpaired arms.
UNPAIRED_METHOD = "unpaired-welch"


def _spent_rows(usage: Mapping[str, Any]) -> list[UsageRow]:
    """`spent-usd` (this invocation's own runs and attempts) and `attempts` (earlier attempts:
    how many, their calls and cost), shown only when an arm was reused or retried."""
    reused = read.mapping(usage.get("reused"))
    attempts = read.mapping(usage.get("attempts"))
    retried = {v: read.mapping(attempts.get(v)) for v in VARIANTS}
    if not any(reused.values()) and not any(a.get("runs") for a in retried.values()):
        return []
    spent = read.mapping(usage.get("spentUsd"))

    def cost(value: Any) -> str:
        return _amount(float(value), "costUsd") if isinstance(value, int | float) else "unavailable"

    def tried(found: Mapping[str, Any]) -> str:
        calls = found.get("modelCalls")
        shown = _amount(float(calls), "modelCalls") if isinstance(calls, int | float) else "?"
        return f"{found.get('runs') or 0} (calls {shown}, cost {cost(found.get('costUsd'))})"

    rows = [UsageRow("spent-usd", cost(spent.get("baseline")), cost(spent.get("candidate")), "")]
    if any(a.get("runs") for a in retried.values()):
        rows.append(
            UsageRow("attempts", tried(retried["baseline"]), tried(retried["candidate"]), "")
        )
    return rows


def usage_rows(usage: Mapping[str, Any] | None) -> list[UsageRow]:
    """The rows of one group's usage facts (none when no subject started)."""
    if not isinstance(usage, Mapping):
        return []
    arms = read.mapping(usage.get("arms"))
    changes = read.mapping(usage.get("change"))
    return [
        UsageRow(
            LABELS[name],
            arm_cell(read.mapping(read.mapping(arms.get("baseline")).get(name)), name),
            arm_cell(read.mapping(read.mapping(arms.get("candidate")).get(name)), name),
            change_cell(read.mapping(changes.get(name)), name),
        )
        for name in FACTS
    ] + _spent_rows(usage)


def result_usage(result_dir: Path, record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """One result's usage facts of a summarised group, from its run records."""
    return group_usage([result_dir], record)


def label_of(group: Mapping[str, Any]) -> str:
    """`id` or `id@host`, as the group's directory is named."""
    return layout.group_dir_name(str(group.get("id")), layout.record_host(group))


def by_group(
    target: Path, groups: Sequence[Mapping[str, Any]], aggregate: bool
) -> list[tuple[str, list[UsageRow], bool]]:
    """(label, rows, simulated) of each group: from the aggregate, or the result's runs."""
    found = []
    for group in groups:
        usage = group.get("usage") if aggregate else result_usage(target, group)
        rows = usage_rows(usage)
        if rows:
            found.append((label_of(group), rows, bool(read.mapping(usage).get("simulated"))))
    return found


# The facts the terminal's one line per group shows (the views show all of them).
TERMINAL_FACTS = ("input", "output", "modelCalls", "toolCalls", "costUsd")


def terminal_line(usage: Mapping[str, Any] | None) -> str | None:
    """`usage baseline→candidate: tokens-in 900→2,600 (x2.89), …`; None without usage."""
    if not isinstance(usage, Mapping):
        return None
    parts = [f"{LABELS[name]} {shown}" for name, shown in fact_changes(usage).items()]
    if not parts:
        return None
    simulated = " (cost simulated)" if usage.get("simulated") else ""
    return f"usage baseline→candidate{simulated}: " + ", ".join(parts)


def fact_changes(usage: Mapping[str, Any]) -> dict[str, str]:
    """Per fact the terminal shows (`TERMINAL_FACTS`), `900→2,600 (x2.89)`: each arm's mean and
    the ratio; a fact either arm lacks is left out."""
    arms = read.mapping(usage.get("arms"))
    changes = read.mapping(usage.get("change"))
    shown: dict[str, str] = {}
    for name in TERMINAL_FACTS:
        found = [read.mapping(read.mapping(arms.get(v)).get(name)).get("mean") for v in VARIANTS]
        means = [float(m) for m in found if isinstance(m, int | float)]
        if len(means) != len(VARIANTS):
            continue
        ratio = read.mapping(changes.get(name)).get("ratio")
        text = "→".join(_amount(m, name) for m in means)
        shown[name] = text + (f" (x{ratio:.2f})" if ratio else "")
    return shown
