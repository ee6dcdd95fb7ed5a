"""The self-contained HTML report of a result or an aggregate: no network, works from file://.

The markup lives in `templates/` and is rendered by the environment in `markup.py`, which
escapes every value; this module turns the result's evidence into plain values for the
templates. Turns, files and long texts sit in `<details>` elements that start collapsed, so
large transcripts stay usable without scripts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analysis.gate_decision import recorded_decision
from ..evidence import layout, read
from ..evidence.read import load_aggregate, load_invocation
from .decision import bottom_line
from .glance import aggregate_glance, result_glance
from .hosts import CrossHostGroup, aggregate_cross_host, cross_host_groups
from .html_parts import (
    AggregateCheck,
    AggregateComparison,
    AggregateGroup,
    Comparison,
    CrossHost,
    Decision,
    GradeError,
    GroupError,
    GroupView,
    RateBar,
    RateView,
    Review,
    Trigger,
    TriggerRow,
    TriggerSide,
)
from .html_run import variant_view
from .markup import ENVIRONMENT, Links, objects
from .places import placed_text, project_root, shown_path
from .present import Rate, comparison_stats, declared_turns, format_number, mapping, rate_of
from .statistics import (
    RATE_LABELS,
    aggregate_trigger_rates,
    consistency_of,
    excluded_text,
    result_trigger_rates,
    sample_size_text,
    sequential_text,
    skill_label,
)
from .text import (
    VARIANTS,
    GroupEvidence,
    is_aggregate,
    load_group,
    load_summary,
    selected_grade_state,
)
from .usage import result_usage, usage_rows

# ---------------------------------------------------------------------------------------------
# Documents


@read.read_once()
def render_html(result_dir: Path, *, link_base: Path | None = None) -> str:
    """One self-contained HTML document for a result or an aggregate directory.

    Links to raw artifacts are relative to `link_base`, the directory the report will be
    saved in (default: the result directory itself). The report is made to be shared: it names
    files relative to the project or the results directory, never by absolute path (`places`).
    """
    result_dir = Path(result_dir).resolve()
    links = Links(Path(link_base).resolve() if link_base else result_dir)
    if is_aggregate(result_dir):
        data = _load_aggregate(result_dir)
        document = _aggregate_document(result_dir, links)
        return placed_text(document, _trials_root(result_dir, data), result_dir.parent.parent)
    document = _result_document(result_dir, links)
    return placed_text(document, project_root(result_dir), result_dir.parent.parent)


def _load_invocation(result_dir: Path) -> tuple[Path, Mapping[str, Any] | None]:
    """The invocation record's path, and its content when the file exists."""
    return layout.invocation_file(result_dir), load_invocation(result_dir)


def _result_document(result_dir: Path, links: Links) -> str:
    summary = load_summary(result_dir)
    groups = [load_group(result_dir, g) for g in summary["groups"] if isinstance(g, dict)]
    result_id = summary.get("id", result_dir.name)
    invocation_path, invocation = _load_invocation(result_dir)
    root = project_root(result_dir)
    definitions = [
        {"path": shown_path(d.get("path"), root), "kind": d.get("kind"), "id": d.get("id")}
        for d in map(mapping, (invocation or {}).get("definitions") or [])
    ]
    result = {
        "id": result_id,
        "state": summary.get("state"),
        "path": shown_path(result_dir, root, result_dir.parent.parent),
        "trial": summary.get("trial", 1),
        "completed": summary.get("completedAt", "unknown"),
        "definitions": definitions,
        "budget": _budget(summary.get("budget")),
        "links": [
            links.to(layout.SUMMARY, layout.summary_file(result_dir)),
            links.to(layout.INVOCATION, invocation_path),
        ],
    }
    return ENVIRONMENT.get_template("result.html.j2").render(
        title=f"skill-eval result {result_id}",
        decision=_decision(result_dir),
        result=result,
        groups=[_group(result_dir, group, links) for group in groups],
        triggers=_triggers(result_trigger_rates(result_dir)),
        cross=_cross_host(cross_host_groups(result_dir)),
        cross_counts=False,
        glance=result_glance(groups),
    )


def _decision(target: Path) -> Decision:
    """The bottom line that leads the report: the significance gate's decision when the run
    was gated (decided again from the evidence, as the run decided it), then each group's."""
    gate = recorded_decision(target)
    return {
        "gate": None if gate is None else {"failed": not gate.passed, "text": gate.headline()},
        "groups": bottom_line(target),
    }


def _trials_root(aggregate_dir: Path, data: Mapping[str, Any]) -> Path | None:
    """The project root the aggregate's first trial recorded, if that trial is there."""
    trials = objects(data.get("trials"))
    first = aggregate_dir.parent / str(trials[0].get("id")) if trials else None
    return project_root(first) if first is not None and first.is_dir() else None


def _cross_host(groups: list[CrossHostGroup]) -> list[CrossHost]:
    return [
        {
            "id": group.id,
            "hosts": group.hosts,
            "held": group.held,
            "verdict": group.verdict,
            "cannot_run": group.cannot_run,
            "rows": [
                {"kind": r.kind, "id": r.id, "cells": list(r.states.values()), "held": r.held}
                for r in group.rows
            ],
        }
        for group in groups
    ]


def _budget(budget: Any) -> dict[str, str] | None:
    if not isinstance(budget, Mapping):
        return None
    return {
        "spent": format_number(budget.get("spent")),
        "max_cost": format_number(budget.get("maxCost")),
        "exhausted": " — budget exhausted" if budget.get("exhausted") else "",
    }


# ---------------------------------------------------------------------------------------------
# One group


def _group(result_dir: Path, group: GroupEvidence, links: Links) -> GroupView:
    record, definition, grade = group.record, group.definition, group.grade or {}
    first_run = group.runs.get("baseline") or group.runs.get("candidate")
    states = mapping(record.get("variants"))
    gdir = group.directory
    group_links = [
        links.to(layout.DEFINITION, gdir / layout.DEFINITION),
        links.to(str(group.grade_file), gdir / str(group.grade_file)),
        links.to(group.group_file, gdir / group.group_file),
        links.to(layout.MANIFEST, gdir / layout.MANIFEST),
    ]
    if (gdir / "resources" / "fixture").is_dir():
        group_links.append(links.to("fixture/", gdir / "resources" / "fixture"))
    if (gdir / layout.SEMANTIC_GRADE).is_file():
        group_links.append(links.to(layout.SEMANTIC_GRADE, gdir / layout.SEMANTIC_GRADE))
    return {
        "id": group.id,
        "state": record.get("state"),
        "grade": selected_grade_state(group, None),
        "type": definition.get("type") or (first_run or {}).get("evaluationType"),
        "position": record.get("position"),
        "variant_states": [(v, states.get(v)) for v in VARIANTS],
        "turns": declared_turns(definition, first_run),
        "questions": list(definition.get("review_questions") or []),
        "checks": [
            {
                key: check.get(key)
                for key in ("id", "variant", "kind", "state", "expected", "observed")
            }
            for check in grade.get("checks") or []
        ],
        "grade_errors": [_grade_error(e) for e in objects(grade.get("errors"))],
        "group_errors": [_group_error(e) for e in objects(record.get("errors"))],
        "comparisons": [_comparison(c) for c in grade.get("comparisons") or []],
        "review": _review(group.review),
        "variants": [variant_view(result_dir, group, v, links) for v in VARIANTS],
        "usage": usage_rows(result_usage(result_dir, record)),
        "links": group_links,
    }


def _grade_error(error: Mapping[str, object]) -> GradeError:
    return {"id": error.get("id") or "system", "reason": str(error.get("reason"))}


def _group_error(error: Mapping[str, object]) -> GroupError:
    artifact = error.get("artifact") or error.get("kind")
    return {"artifact": artifact, "message": str(error.get("message"))}


def _comparison(comparison: Mapping[str, Any]) -> Comparison:
    sides = [mapping(comparison.get(side)) for side in VARIANTS]
    return {
        "id": comparison.get("id"),
        "kind": comparison.get("kind"),
        "sides": [{"check": s.get("check"), "state": s.get("state")} for s in sides],
        "transition": comparison.get("transition"),
    }


def _review(review: Mapping[str, Any] | None) -> Review | None:
    if not isinstance(review, Mapping):
        return None
    answers = [
        {key: answer.get(key) for key in ("question", "baseline", "candidate", "rationale")}
        for answer in objects(review.get("answers"))
    ]
    return {
        "state": review.get("state"),
        "model": review.get("model"),
        "answers": answers,
        "errors": list(review.get("errors") or []),
    }


# ---------------------------------------------------------------------------------------------
# Aggregates


def _percent(value: float | None) -> str:
    return "unavailable" if value is None else f"{value * 100:.1f}%"


def _rate(rate: Rate) -> RateView:
    """A rate as shown: the interval bar's positions (percent of its width) and the numbers."""
    interval = rate.interval
    bar: RateBar | None = None
    if interval is not None and rate.rate is not None:
        lo, hi = (max(0.0, min(1.0, v)) for v in interval)
        point = max(0.0, min(1.0, rate.rate))
        bar = {
            "left": f"{lo * 100:.2f}",
            "width": f"{(hi - lo) * 100:.2f}",
            "point": f"{point * 100:.2f}",
        }
    shown = (
        f"{_percent(rate.rate)} [{_percent(interval[0])}, {_percent(interval[1])}]"
        if interval is not None
        else _percent(rate.rate)
    )
    return {"passes": rate.passes, "total": rate.total, "bar": bar, "shown": shown}


def _load_aggregate(aggregate_dir: Path) -> Mapping[str, Any]:
    """`aggregate.json` of an aggregate directory, through the evidence reader."""
    return load_aggregate(aggregate_dir)


def _aggregate_document(aggregate_dir: Path, links: Links) -> str:
    data = _load_aggregate(aggregate_dir)
    aggregate_id = data.get("id", aggregate_dir.name)
    inputs = data.get("inputs")
    same = None
    if isinstance(inputs, Mapping) and "identical" in inputs:
        same = "identical in every trial" if inputs["identical"] else "NOT identical across trials"
    trials = [
        {
            "link": links.to(str(trial.get("id")), aggregate_dir.parent / str(trial.get("id"))),
            "state": trial.get("state"),
        }
        for trial in objects(data.get("trials"))
    ]
    aggregate = {
        "id": aggregate_id,
        "state": data.get("state"),
        "path": shown_path(
            aggregate_dir, _trials_root(aggregate_dir, data), aggregate_dir.parent.parent
        ),
        "trials": trials,
        "requested": data.get("requestedTrials"),
        "adaptive": _adaptive(data.get("adaptive")),
        "inputs": same,
        "budget": _budget(data.get("budget")),
        "groups": [_aggregate_group(g) for g in objects(data.get("groups"))],
        "links": [links.to(layout.AGGREGATE, layout.aggregate_file(aggregate_dir))],
    }
    return ENVIRONMENT.get_template("aggregate.html.j2").render(
        title=f"skill-eval aggregate {aggregate_id}",
        decision=_decision(aggregate_dir),
        aggregate=aggregate,
        triggers=_triggers(aggregate_trigger_rates(data)),
        cross=_cross_host(aggregate_cross_host(data)),
        cross_counts=True,
        glance=aggregate_glance(list(objects(data.get("groups")))),
    )


def _triggers(rates: Sequence[Mapping[str, Any]]) -> list[Trigger]:
    """Trigger rates as shown: per skill, per rate, the variants that observed or left out runs."""
    shown: list[Trigger] = []
    for entry in rates:
        variants, differences = mapping(entry.get("variants")), mapping(entry.get("difference"))
        rows: list[TriggerRow] = []
        for name, label in RATE_LABELS.items():
            sides: list[TriggerSide] = []
            for variant in VARIANTS:
                counts = mapping(mapping(variants.get(variant)).get(name))
                left_out = excluded_text(counts)
                if (
                    not counts.get("observed")
                    and left_out == "none"
                    and not counts.get("unobserved")
                ):
                    continue
                read, observed = int(counts.get("read") or 0), int(counts.get("observed") or 0)
                sides.append(
                    {
                        "variant": variant,
                        "read": read,
                        "observed": observed,
                        "rate": _rate(rate_of({"pass": read, "fail": observed - read})),
                        "excluded": left_out,
                        "unobserved": counts.get("unobserved") or 0,
                    }
                )
            difference = mapping(differences.get(name))
            interval = difference.get("interval")
            if sides:
                rows.append(
                    {
                        "name": label,
                        "sides": sides,
                        "difference": (
                            f"{_signed(difference.get('difference'))} "
                            f"[{_signed(interval[0])}, {_signed(interval[1])}]"
                            if isinstance(interval, list) and len(interval) == 2
                            else None
                        ),
                    }
                )
        if rows:
            shown.append({"label": skill_label(entry), "rates": rows})
    return shown


def _signed(value: Any) -> str:
    return f"{float(value) * 100:+.1f} pp" if isinstance(value, int | float) else "unavailable"


def _aggregate_group(group: Mapping[str, Any]) -> AggregateGroup:
    comparisons: list[AggregateComparison] = []
    for comparison in objects(group.get("comparisons")):
        baseline, candidate, p_value, unresolved = comparison_stats(comparison)
        transitions = ", ".join(
            f"{name} {count}"
            for name, count in (comparison.get("transitions") or {}).items()
            if count
        )
        comparisons.append(
            {
                "id": comparison.get("id"),
                "kind": comparison.get("kind"),
                "baseline": _rate(baseline),
                "candidate": _rate(candidate),
                "transitions": transitions or "none",
                "p_value": format_number(p_value),
                "unresolved": unresolved,
                "sample_size": sample_size_text(comparison) if unresolved else None,
                "sequential": sequential_text(comparison),
            }
        )
    checks: list[AggregateCheck] = [
        {
            "id": check.get("id"),
            "variant": check.get("variant"),
            "kind": check.get("kind"),
            "passed": check.get("pass"),
            "failed": check.get("fail"),
            "unavailable": check.get("unavailable"),
            "rate": _rate(rate_of(check)),
            "consistency": [
                {"k": row["k"], "at": _percent(row["passAtK"]), "hat": _percent(row["passHatK"])}
                for row in consistency_of(check)
            ],
        }
        for check in objects(group.get("checks"))
    ]
    adaptive = mapping(group.get("adaptive"))
    return {
        "id": group.get("id"),
        "trials": group.get("trials"),
        "stop": _STOPS.get(str(adaptive.get("stop"))) if adaptive else None,
        "comparisons": comparisons,
        "checks": checks,
        "usage": usage_rows(mapping(group.get("usage"))),
    }


_STOPS = {
    "resolved": "stopped: every comparison resolved",
    "futility": "stopped: the rest cannot or will not resolve by the maximum",
    "max-trials": "ran to the maximum, unresolved",
    "budget-exhausted": "stopped by the spend ceiling",
    "incomplete": "the run ended early",
    "no-comparisons": "no comparison to resolve: one trial",
}


def _adaptive(value: Any) -> str | None:
    """The adaptive-trials line of an aggregate: its method, level and maximum."""
    found = mapping(value)
    if not found:
        return None
    return f"{found.get('description')}, alpha {found.get('alpha')}"
