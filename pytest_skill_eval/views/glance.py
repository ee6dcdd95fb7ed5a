"""The at-a-glance section the HTML report opens with: plain values for `glance.html.j2`.

Groups × comparisons with their transitions (per host when the groups ran on several), and for
an aggregate each check's pass rate per variant as a bar with its Wilson interval, beside its
pass@k / pass^k. The bars are inline SVG drawn by the template from the numbers here: no
script, no network, and every value passes the template's escaper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

from ..evidence import layout
from .markup import objects
from .present import Rate, mapping, rate_of
from .statistics import consistency_of
from .text import VARIANTS, GroupEvidence

BAR_WIDTH = 160
"""Width of a rate bar in SVG user units; 0% is at x=0 and 100% at x=BAR_WIDTH."""


class Comparison(TypedDict):
    """A comparison's column: its transition (one result) or each transition's count."""

    id: object
    transitions: list[tuple[object, object]]


class Row(TypedDict):
    """A group's row: its state and host (one result) and its comparisons."""

    id: object
    state: object
    host: str | None
    comparisons: list[Comparison]


class Bar(TypedDict):
    """SVG geometry of one rate bar; an undrawn bar (no observation) has only its label."""

    drawn: bool
    label: str
    width: int
    ci_x: NotRequired[str]
    ci_width: NotRequired[str]
    point_x: NotRequired[str]
    title: NotRequired[str]


class ConsistencyCell(TypedDict):
    """pass@k and pass^k at the largest k, as percentages."""

    k: int
    at: str
    hat: str


class CheckBar(TypedDict):
    """One check's rate bar in one variant."""

    group: object
    id: object
    variant: str
    bar: Bar
    consistency: ConsistencyCell | None


class Glance(TypedDict):
    """The at-a-glance section: the rows, whether they differ by host, and the check bars."""

    groups: list[Row]
    per_host: bool
    checks: list[CheckBar]


def result_glance(groups: Sequence[GroupEvidence]) -> Glance:
    """Groups × comparisons of one result: each comparison's transition, and the host."""
    rows: list[Row] = []
    for group in groups:
        runs = [group.runs.get(v) or {} for v in VARIANTS]
        hosts = sorted({str(mapping(r.get("process")).get("host")) for r in runs if r} - {"None"})
        rows.append(
            {
                "id": group.id,
                "state": group.record.get("state"),
                # No run says (none started): the group record names the host all the same.
                "host": ", ".join(hosts) or layout.record_host(group.record),
                "comparisons": [
                    {"id": c.get("id"), "transitions": [(c.get("transition"), None)]}
                    for c in objects((group.grade or {}).get("comparisons"))
                ],
            }
        )
    seen = {str(row["host"]) for row in rows}
    return {"groups": rows, "per_host": len(seen) > 1, "checks": []}


def aggregate_glance(groups: Sequence[Mapping[str, object]]) -> Glance:
    """Groups × comparisons with transition counts, and every check's rate bar per variant."""
    rows: list[Row] = []
    checks: list[CheckBar] = []
    for group in groups:
        comparisons: list[Comparison] = []
        for comparison in objects(group.get("comparisons")):
            counts = mapping(comparison.get("transitions"))
            comparisons.append(
                {
                    "id": comparison.get("id"),
                    "transitions": [(name, count) for name, count in counts.items() if count],
                }
            )
        rows.append(
            {
                "id": group.get("id"),
                "state": None,
                "host": None,
                "comparisons": comparisons,
            }
        )
        for variant in VARIANTS:
            for check in objects(group.get("checks")):
                if check.get("variant") != variant:
                    continue
                consistency = consistency_of(check)
                last = consistency[-1] if consistency else None
                checks.append(
                    {
                        "group": group.get("id"),
                        "id": check.get("id"),
                        "variant": variant,
                        "bar": rate_bar(rate_of(check), int(check.get("fail") or 0)),
                        "consistency": (
                            {
                                "k": last["k"],
                                "at": _percent(last["passAtK"]),
                                "hat": _percent(last["passHatK"]),
                            }
                            if last is not None
                            else None
                        ),
                    }
                )
    return {"groups": rows, "per_host": False, "checks": checks}


def rate_bar(rate: Rate, fails: int) -> Bar:
    """SVG geometry of one rate: the interval as a band, the rate as a tick, and the label."""
    label = f"{rate.passes}/{rate.passes + fails}"
    if rate.rate is None or rate.interval is None:
        return {"drawn": False, "label": f"{label} (no observation)", "width": BAR_WIDTH}
    lo, hi = (max(0.0, min(1.0, v)) for v in rate.interval)
    point = max(0.0, min(1.0, rate.rate))
    return {
        "drawn": True,
        "width": BAR_WIDTH,
        "ci_x": f"{lo * BAR_WIDTH:.2f}",
        "ci_width": f"{max(hi - lo, 0.0) * BAR_WIDTH:.2f}",
        "point_x": f"{max(0.0, min(point * BAR_WIDTH - 1, BAR_WIDTH - 2)):.2f}",
        "title": f"pass rate {_percent(rate.rate)}, 95% Wilson interval "
        f"[{_percent(lo)}, {_percent(hi)}]",
        "label": f"{label} {_percent(rate.rate)} [{_percent(lo)}, {_percent(hi)}]",
    }


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"
