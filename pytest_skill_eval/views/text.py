"""The grade-first text view of a result or an aggregate (reference §8), TAB-separated rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..analysis import noise_floor
from ..definitions import VARIANTS as VARIANTS  # re-exported to the other views
from ..evidence import layout, read
from ..evidence.iteration import unchanged_groups, unchanged_line
from ..evidence.read import GroupEvidence as GroupEvidence
from ..evidence.read import (
    ReadError,
    cannot_run_facts,
    load_aggregate,
    load_invocation,
    read_evidence_json,
)
from ..evidence.read import is_aggregate as is_aggregate
from ..evidence.read import load_group as load_group
from ..evidence.read import load_summary as load_summary
from ..evidence.read import select_groups as select_groups
from .decision import bottom_line
from .hosts import aggregate_cross_host_lines, cross_host_lines
from .offered import activation_rows
from .present import (
    Rate,
    changes_of,
    compact_json,
    comparison_stats,
    declared_turns,
    escape_cell,
    excerpt_of,
    expectation_variants,
    format_interval,
    format_number,
    mapping,
    observation,
    provider_label,
    rate_of,
    relative,
    row,
    run_spend,
    text_block,
    tool_names,
    usage_cells,
)
from .skill_warnings import skill_warning_lines
from .statistics import (
    aggregate_trigger_rates,
    consistency_cells,
    noise_floor_lines,
    result_trigger_rates,
    sample_size_text,
    sequential_text,
    trigger_text_rows,
)
from .toolerrors import tool_errors
from .usage import result_usage, usage_rows

# The views' names for the reader's error and JSON loader; a view refuses what the reader does.
ViewError = ReadError
read_json_file = read_evidence_json


# ---------------------------------------------------------------------------------------------
# Reading a result: through the evidence reader


def check_variant(variant: str | None) -> None:
    """Reject a variant selector other than baseline or candidate."""
    if variant is not None and variant not in VARIANTS:
        raise ViewError(f"Unknown variant selector: {variant} (use baseline or candidate)")


def visible_grade_errors(group: GroupEvidence, variant: str | None) -> list[Mapping[str, Any]]:
    """Grade errors, hiding those of the other variant's expectations when one is selected."""
    errors: list[Mapping[str, Any]] = [
        e for e in (group.grade or {}).get("errors") or [] if isinstance(e, Mapping)
    ]
    if variant is None:
        return errors
    owners = expectation_variants(group.definition)
    return [e for e in errors if owners.get(str(e.get("id")), variant) == variant]


def selected_grade_state(group: GroupEvidence, variant: str | None) -> str:
    """The group's grade state; with a variant selected, recomputed from that variant alone."""
    if variant is None or group.grade is None:
        return str(group.record.get("grade") or (group.grade or {}).get("state") or "unavailable")
    if visible_grade_errors(group, variant):
        return "grade-error"
    checks = [c for c in group.grade.get("checks") or [] if c.get("variant") == variant]
    if checks and all(c.get("state") == "unavailable" for c in checks):
        return "unavailable"
    return "complete"


# ---------------------------------------------------------------------------------------------
# The result view


@read.read_once()
def render_text(result_dir: Path, *, group: str | None = None, variant: str | None = None) -> str:
    """The text view of a result or an aggregate directory; ends with a newline."""
    result_dir = Path(result_dir)
    if is_aggregate(result_dir):
        if group is not None or variant is not None:
            raise ViewError(
                "selectors are not supported for an aggregate; view an individual trial instead"
            )
        return render_aggregate_text(result_dir)
    summary = load_summary(result_dir)
    records = select_groups(summary, group)
    check_variant(variant)
    lines = [
        f"Result {summary.get('id', result_dir.name)} [{summary.get('state')}]",
        f"Path: {escape_cell(str(result_dir))}",
    ]
    lines.extend(_budget_rows(summary.get("budget")))
    if group is None and variant is None:
        lines.extend(bottom_line_rows(result_dir))
    for record in records:
        lines.append("")
        lines.extend(_group_lines(result_dir, load_group(result_dir, record), variant))
        if variant is None:
            lines.extend(usage_text_rows(result_usage(result_dir, record)))
    cannot = [
        f for f in cannot_run_facts(load_invocation(result_dir)) if group in (None, f["group"])
    ]
    if cannot:
        lines.extend(["", "Skipped (a chosen host cannot run the group):"])
        lines.extend(f"{f['group']} on {f['host']}: cannot run: {f['reason']}" for f in cannot)
    unchanged = [
        u for u in unchanged_groups(load_invocation(result_dir)) if group in (None, u["group"])
    ]
    if unchanged:
        lines.extend(["", "Not run (inputs unchanged since an earlier result):"])
        lines.extend(unchanged_line(u) for u in unchanged)
    if group is None and variant is None:
        lines.extend(_trigger_lines(trigger_text_rows(result_trigger_rates(result_dir))))
        cross = cross_host_lines(result_dir, indent="")
        if cross:
            lines.extend(["", "Cross-host:", *cross])
    return "\n".join(lines) + "\n"


def bottom_line_rows(target: Path) -> list[str]:
    """The decision per group, first: `bottom-line<TAB>group<TAB>sentence` rows."""
    return [row("bottom-line", line.group, line.text) for line in bottom_line(target)]


def _trigger_lines(rows: list[str]) -> list[str]:
    return ["", "Trigger rates:", *rows] if rows else []


def _budget_rows(budget: Any) -> list[str]:
    if not isinstance(budget, Mapping):
        return []
    exhausted = "true" if budget.get("exhausted") else "false"
    return [
        row(
            "budget",
            f"max-cost={format_number(budget.get('maxCost'))}",
            f"spent={format_number(budget.get('spent'))}",
            f"exhausted={exhausted}",
        )
    ]


def _group_lines(result_dir: Path, group: GroupEvidence, variant: str | None) -> list[str]:
    definition = group.definition
    record = group.record
    first_run = group.runs.get("baseline") or group.runs.get("candidate")
    group_type = definition.get("type") or (first_run or {}).get("evaluationType")
    label = layout.group_dir_name(group.id, layout.record_host(record))
    lines = [f"Group {label} [{record.get('state')}] type={group_type}"]
    declared = definition.get("input") or {}
    turns = declared_turns(definition, first_run)
    if "turns" in declared:
        lines.append(f"Turns: {len(turns)}")
        for number, prompt in enumerate(turns, start=1):
            lines.extend(text_block(f"Turn {number} prompt", prompt, "  "))
    elif turns:
        lines.extend(text_block("Prompt", turns[0], ""))
    questions = [str(q) for q in definition.get("review_questions") or []]
    if questions:
        lines.append("Review questions:")
        lines.extend(f"  - {q}" for q in questions)

    lines.append(f"Grade [{selected_grade_state(group, variant)}]")
    checks = [
        c
        for c in (group.grade or {}).get("checks") or []
        if variant is None or c.get("variant") == variant
    ]
    # Checks the newest noise floor found flaky did not gate this run (its invocation says so).
    flaky = noise_floor.recorded_flaky(result_dir)
    lines.extend(_check_row(c, noise_floor.ignored(flaky, group.directory.name, c)) for c in checks)
    if not checks:
        lines.append("  (no selected checks)")
    grade_errors = visible_grade_errors(group, variant)
    if grade_errors:
        lines.append("Grade errors:")
        lines.extend(
            row("error", "grade", str(e.get("id") or "system"), str(e.get("reason")))
            for e in grade_errors
        )
    group_errors = [e for e in record.get("errors") or [] if isinstance(e, Mapping)]
    if group_errors:
        lines.append("Group errors:")
        lines.extend(
            row(
                "error",
                "group",
                str(e.get("artifact") or e.get("kind")),
                str(e.get("message")),
            )
            for e in group_errors
        )
    comparisons = (group.grade or {}).get("comparisons") or []
    if variant is None and comparisons:
        lines.append("Comparisons:")
        lines.extend(_comparison_row(c) for c in comparisons)
    lines.extend(_review_lines(group.review, variant))
    for name in VARIANTS:
        if variant is not None and name != variant:
            continue
        lines.append("")
        lines.extend(_variant_lines(result_dir, group, name))
    lines.append(
        row(
            "artifacts",
            f"definition={layout.GROUPS}/{group.directory.name}/{layout.DEFINITION}",
            f"grade=groups/{group.directory.name}/{group.grade_file}",
            f"group=groups/{group.directory.name}/{group.group_file}",
        )
    )
    return lines


def _check_row(check: Mapping[str, Any], flaky: bool = False) -> str:
    observed = check.get("observed")
    if check.get("kind") == "response-text" and isinstance(observed, Mapping):
        shown = f"response@turn:{observed.get('turn')}"
    else:
        shown = compact_json(observation(check))
    return row(
        "check",
        str(check.get("id")),
        str(check.get("variant")),
        str(check.get("kind")),
        str(check.get("state")),
        f"expected={compact_json(check.get('expected'))}",
        f"observed={shown}",
        *(f"text {excerpt}" for excerpt in [excerpt_of(check)] if excerpt is not None),
        *(["flaky: does not gate"] if flaky else []),
    )


def _comparison_row(comparison: Mapping[str, Any]) -> str:
    sides = []
    for side in VARIANTS:
        data = mapping(comparison.get(side))
        sides.append(f"{side}={data.get('check')}:{data.get('state')}")
    return row(
        "comparison",
        str(comparison.get("id")),
        str(comparison.get("kind")),
        str(comparison.get("transition")),
        *sides,
    )


def _review_lines(review: Mapping[str, Any] | None, variant: str | None) -> list[str]:
    if not isinstance(review, Mapping):
        return []
    lines = [
        f"Advisory review [{review.get('state')}] model={review.get('model')} "
        "(not canonical evidence)"
    ]
    shown = [v for v in VARIANTS if variant is None or v == variant]
    for number, answer in enumerate(review.get("answers") or [], start=1):
        if not isinstance(answer, Mapping):
            continue
        lines.append(
            row(
                "review",
                f"Q{number}",
                *(f"{v}={answer.get(v)}" for v in shown),
                str(answer.get("rationale")),
            )
        )
    lines.extend(row("error", "review", str(e)) for e in review.get("errors") or [])
    return lines


def _variant_lines(result_dir: Path, group: GroupEvidence, variant: str) -> list[str]:
    run = group.runs.get(variant)
    if run is None:
        return [f"{variant.capitalize()} [missing]", f"  error: {layout.RUN} is missing"]
    state = run.get("state")
    complete = state == "complete"
    lines = [f"{variant.capitalize()} [{state}]"]
    provider = provider_label(run)
    if provider:
        lines.append(f"  provider: {escape_cell(provider)}")
    turns = [t for t in run.get("turns") or [] if isinstance(t, Mapping)]
    if run.get("evaluationType") == "description" and (complete or turns):
        activation = run.get("activation") or {}
        prefix = "" if complete else "observed "
        read = "yes" if activation.get("targetRead") else "no"
        read_turns = ",".join(str(t) for t in activation.get("readTurns") or []) or "none"
        lines.append(f"  {prefix}target-read: {read}")
        lines.append(f"  {prefix}read-turns: {read_turns}")
        lines.extend(activation_rows(group.directory / variant, run))
    delivery = run.get("delivery")
    if run.get("evaluationType") == "body" and isinstance(delivery, Mapping):
        lines.append(f"  delivery: {delivery.get('kind')} on turn {delivery.get('turn')}")
        lines.append(f"  tools-used: {escape_cell(','.join(tool_names(run))) or 'none'}")
        for key, paths in changes_of(run).items():
            lines.append(row("  changes", key, *paths))
    for turn in turns:
        flags = "settled" if turn.get("settled") else "unsettled"
        if turn.get("targetRead"):
            flags += ", target-read"
        lines.append(f"  Turn {turn.get('turn')} [{flags}]")
        lines.extend(text_block("response", str(turn.get("response") or ""), "    "))
    if complete and not turns:
        lines.extend(text_block("response", str(run.get("response") or ""), "  "))
    lines.append(row("  usage", *usage_cells(run.get("usage"), run_spend(run))))
    process = mapping(run.get("process"))
    assistant_error = process.get("assistantError") or next(
        (t.get("assistantError") for t in turns if t.get("assistantError")), None
    )
    if assistant_error:
        lines.append(f"  assistant-error: {escape_cell(str(assistant_error))}")
    if process.get("terminationReason"):
        lines.append(f"  termination: {escape_cell(str(process['terminationReason']))}")
    for key, label in (("protocolErrors", "protocol-errors"), ("parseErrors", "parse-errors")):
        count = len(process.get(key) or [])
        if count:
            lines.append(f"  {label}: {count}")
    lines += [f"  tool-error: {escape_cell(e)}" for e in tool_errors(group.directory / variant)]
    warned = skill_warning_lines(group.directory / variant)
    lines += [f"  skill-warning: {escape_cell(w)}" for w in warned]
    error = run.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        lines.append(f"  error: {escape_cell(str(error['message']))}")
    if run.get("hint"):
        lines.append(f"  hint: {escape_cell(str(run['hint']))}")
    reused = run.get("reused")  # copied from an earlier sealed result, not run in this one
    if isinstance(reused, Mapping):
        lines.append(row("  reused", str(reused.get("result")), str(reused.get("root"))))
    lines.append(row("  artifacts", *_artifact_cells(result_dir, group, variant, run)))
    return lines


def artifact_paths(
    result_dir: Path, group: GroupEvidence, variant: str, run: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """(name, path relative to the result) of every raw artifact a run names, run file first."""
    variant_dir = group.directory / variant
    base = relative(result_dir, variant_dir)
    found = [("run", f"{base}/{group.run_files.get(variant) or layout.RUN}")]
    if run.get("workspace"):
        found.append(("workspace", f"{base}/workspace"))
    artifacts = mapping(run.get("artifacts"))
    transcript = artifacts.get("transcript")
    found.append(
        ("transcript", f"{base}/{transcript if isinstance(transcript, str) else layout.TRANSCRIPT}")
    )
    for name, value in artifacts.items():
        if name != "transcript" and isinstance(value, str):
            found.append((str(name), f"{base}/{value}"))
    return found


def _artifact_cells(
    result_dir: Path, group: GroupEvidence, variant: str, run: Mapping[str, Any]
) -> list[str]:
    return [f"{name}={path}" for name, path in artifact_paths(result_dir, group, variant, run)]


# ---------------------------------------------------------------------------------------------
# The aggregate view


def usage_text_rows(usage: Mapping[str, Any] | None) -> list[str]:
    """`usage<TAB>fact<TAB>baseline=…<TAB>candidate=…<TAB>change=…` rows of a group."""
    return [
        row("usage", r.fact, f"baseline={r.baseline}", f"candidate={r.candidate}",
            f"change={r.change}")
        for r in usage_rows(usage)
    ]  # fmt: skip


def _rate_cells(prefix: str, rate: Rate) -> list[str]:
    shown = format_number(rate.rate) if rate.rate is not None else "unavailable"
    return [f"{prefix}rate={shown}", f"{prefix}interval={format_interval(rate.interval)}"]


def render_aggregate_text(aggregate_dir: Path) -> str:
    """The aggregate view: trials, then per group comparison and check counts with statistics."""
    data: Mapping[str, Any] = load_aggregate(aggregate_dir)
    trials = [t for t in data.get("trials") or [] if isinstance(t, Mapping)]
    lines = [
        f"Aggregate {data.get('id', aggregate_dir.name)} [{data.get('state')}] "
        f"trials={len(trials)}/{data.get('requestedTrials')}",
        f"Path: {escape_cell(str(aggregate_dir))}",
    ]
    lines.extend(_budget_rows(data.get("budget")))
    lines.extend(bottom_line_rows(aggregate_dir))
    inputs = data.get("inputs")
    if isinstance(inputs, Mapping) and "identical" in inputs:
        lines.append(row("inputs", f"identical={'true' if inputs['identical'] else 'false'}"))
    lines.extend(row("trial", str(t.get("id")), str(t.get("state"))) for t in trials)
    for group in data.get("groups") or []:
        lines.append("")
        label = layout.group_dir_name(str(group.get("id")), layout.record_host(group))
        lines.append(f"Group {label} trials={group.get('trials')}")
        for comparison in group.get("comparisons") or []:
            lines.append(_aggregate_comparison_row(comparison))
        for check in group.get("checks") or []:
            rate = rate_of(check)
            lines.append(
                row(
                    "check",
                    str(check.get("id")),
                    str(check.get("variant")),
                    str(check.get("kind")),
                    f"pass={rate.passes}/{rate.total}",
                    *_rate_cells("", rate),
                    *consistency_cells(check),
                )
            )
        lines.extend(usage_text_rows(group.get("usage")))
    floor = noise_floor_lines(data)
    if floor:
        lines.extend(["", *floor])
    lines.extend(_trigger_lines(trigger_text_rows(aggregate_trigger_rates(data))))
    cross = aggregate_cross_host_lines(data, indent="")
    if cross:
        lines.extend(["", "Cross-host:", *cross])
    return "\n".join(lines) + "\n"


def _aggregate_comparison_row(comparison: Mapping[str, Any]) -> str:
    baseline, candidate, p_value, unresolved = comparison_stats(comparison)
    transitions: Iterable[tuple[str, Any]] = (comparison.get("transitions") or {}).items()
    cells = [
        "comparison",
        str(comparison.get("id")),
        str(comparison.get("kind")),
        f"baseline={baseline.passes}/{baseline.total}",
        f"candidate={candidate.passes}/{candidate.total}",
        *(f"{name}={count}" for name, count in transitions if count),
        *_rate_cells("baseline-", baseline),
        *_rate_cells("candidate-", candidate),
        f"mcnemar-p={format_number(p_value)}",
    ]
    if unresolved:
        cells.extend(["difference unresolved", sample_size_text(comparison)])
    sequential = sequential_text(comparison)
    if sequential is not None:
        cells.append(sequential)
    return row(*cells)
