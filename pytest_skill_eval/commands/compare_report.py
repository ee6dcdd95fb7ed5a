"""The report `skill-eval compare` prints (as JSON with --json) and gates on: each check's and
comparison's pass rate on both sides and its change, and the report's text form."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

from ..analysis.stats import fisher_exact, newcombe_difference
from ..views.present import format_interval, format_number, row

Status = Literal["regression", "improvement", "no-change", "unresolved", "unavailable"]


@dataclass(frozen=True, slots=True)
class Counts:
    """Pass, fail and unavailable counts of one check on one side."""

    passes: int = 0
    fails: int = 0
    unavailable: int = 0

    @property
    def observed(self) -> int:
        """Trials whose check passed or failed (unavailable ones are no observation)."""
        return self.passes + self.fails


# One side's counts and pass rate ("pass" is a keyword: the functional form).
RateSide = TypedDict(
    "RateSide", {"pass": int, "fail": int, "unavailable": int, "passRate": float | None}
)


class Change(TypedDict):
    """The change from A to B of one pass rate: both sides, the difference with Newcombe's
    interval, Fisher's p and what it amounts to."""

    a: RateSide
    b: RateSide
    change: float | None
    interval: list[float] | None
    fisherP: float
    status: Status


class CheckRow(Change):
    """A check of a group present on both sides."""

    type: Literal["check"]
    group: str
    id: str
    variant: str
    kind: str


class ComparisonRow(Change):
    """One variant of a comparison of a group present on both sides, with each side's
    transition counts."""

    type: Literal["comparison"]
    group: str
    id: str
    variant: str
    kind: str
    transitions: dict[str, dict[str, object]]


Row = CheckRow | ComparisonRow


class SideRef(TypedDict):
    """A compared result or aggregate: its id, kind and directory."""

    id: str
    kind: str
    path: str


class Report(TypedDict):
    """The whole comparison of B against A."""

    schema_version: int
    kind: str
    axis: str
    forced: bool
    a: SideRef
    b: SideRef
    definitionDifferences: list[str]
    onlyIn: dict[str, list[str]]
    regressions: int
    rows: list[Row]


def change(a: Counts, b: Counts) -> Change:
    """The change from A to B of one pass rate: difference, Newcombe interval, Fisher p, status."""
    difference = newcombe_difference(a.passes, a.observed, b.passes, b.observed)
    p_value = fisher_exact(a.passes, a.observed, b.passes, b.observed)
    status: Status
    if difference is None:
        status = "unavailable"
    elif a.observed == 1 and b.observed == 1:
        # One trial each: a flip is all there is to see, and it is reported as such.
        flips: dict[float, Status] = {1.0: "improvement", -1.0: "regression"}
        status = flips.get(difference[0], "no-change")
    elif difference[2] < 0:
        status = "regression"
    elif difference[1] > 0:
        status = "improvement"
    else:
        status = "no-change" if difference[0] == 0 else "unresolved"
    return {
        "a": _side(a),
        "b": _side(b),
        "change": difference[0] if difference else None,
        "interval": list(difference[1:]) if difference else None,
        "fisherP": p_value,
        "status": status,
    }


def _side(counts: Counts) -> RateSide:
    rate = counts.passes / counts.observed if counts.observed else None
    return {
        "pass": counts.passes,
        "fail": counts.fails,
        "unavailable": counts.unavailable,
        "passRate": rate,
    }


def render(report: Report) -> str:
    """TAB-separated rows like `skill-eval view`: header, refusals overridden, rows."""
    a, b = report["a"], report["b"]
    lines = [
        f"Compare {a['id']} -> {b['id']} axis={report['axis']} regressions={report['regressions']}",
        row("a", a["kind"], a["path"]),
        row("b", b["kind"], b["path"]),
    ]
    lines.extend(row("forced", line) for line in report["definitionDifferences"])
    for side, groups in report["onlyIn"].items():
        lines.extend(row("only-in", side, group) for group in groups)
    for entry in report["rows"]:
        cells = [
            entry["type"],
            entry["status"],
            entry["group"],
            entry["id"],
            entry["variant"],
            entry["kind"],
            f"a={entry['a']['pass']}/{entry['a']['pass'] + entry['a']['fail']}",
            f"b={entry['b']['pass']}/{entry['b']['pass'] + entry['b']['fail']}",
            f"change={format_number(entry['change'])}",
            f"interval={format_interval(entry['interval'])}",
            f"fisher-p={format_number(entry['fisherP'])}",
        ]
        if entry["type"] == "comparison":
            for side_name in ("a", "b"):
                shown = entry["transitions"][side_name]
                cells.append(
                    f"{side_name}-transitions="
                    + (",".join(f"{k}:{v}" for k, v in shown.items()) or "none")
                )
        lines.append(row(*cells))
    return "\n".join(lines) + "\n"
