"""The `skill-eval` section of pytest's terminal summary, read through the evidence reader."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..common.wording import counted
from ..definitions import VARIANTS
from ..evidence import layout, read, sealed_root
from ..evidence.iteration import REFUSED_COPY
from . import iteration
from .decision import Decided, bottom_line
from .hosts import aggregate_cross_host_lines, cross_host_lines
from .offered import variant_notes
from .present import escape_cell, p_value_text, reused_label, run_spend
from .skill_warnings import skill_warning_lines
from .statistics import (
    aggregate_trigger_rates,
    consistency_of,
    noise_floor_lines,
    result_trigger_rates,
    sample_size_text,
    sequential_text,
    trigger_terminal_lines,
)
from .toolerrors import tool_errors
from .usage import result_usage, terminal_line

# The progress letters are pytest's; what each means is printed once, in the section's header.
LEGEND = (
    "legend: . passed check  f failed check (evidence)  u unavailable  t transition  F failed run"
)


class Writer(Protocol):
    """The part of pytest's terminal reporter the summary writes through."""

    def write_sep(self, sep: str, title: str | None = None, **markup: bool) -> None: ...
    def write_line(self, line: str | bytes, **markup: bool) -> None: ...


@read.read_once()
def terminal_summary(
    writer: Writer,
    result_dirs: Mapping[int, Path],
    aggregate_dir: Path | None = None,
    *,
    shard: bool = False,
    cwd: Path | None = None,
    gate: Decided | None = None,
    forecast: Sequence[str] = (),
) -> None:
    """The `skill-eval` section: per group states, checks, transitions, cost and evidence path.

    The significance gate's decision (`gate`), when it ran, leads the bottom line; the cost
    forecast printed before the run (`forecast`) follows it, where it is read.

    A shard's results have no state before the merge (`unmerged`), and a trial the shard ran
    nothing of has no directory and no line.
    """
    result_dirs = {t: d for t, d in result_dirs.items() if d.is_dir()}
    if not result_dirs:
        return
    writer.write_sep("=", "skill-eval")
    writer.write_line(LEGEND)
    adaptive = aggregate_dir is not None and "adaptive" in read.load_aggregate(aggregate_dir)
    for trial, result_dir in sorted(result_dirs.items()):
        if adaptive:
            # Adaptive trials can run dozens of times: one line per group and trial, and the
            # aggregate (what decides) last; each trial's detail is in its result's views.
            _trial_lines(writer, trial, result_dir)
        else:
            _result_lines(writer, trial, result_dir, "unmerged" if shard else "unfinished")
    if aggregate_dir is not None:
        _aggregate_lines(writer, aggregate_dir)
    elif len(result_dirs) == 1:
        # A single result has no aggregate: its trigger rates are computed from its evidence.
        for line in trigger_terminal_lines(result_trigger_rates(next(iter(result_dirs.values())))):
            writer.write_line(line)
    if not shard:
        where = cwd or Path.cwd()
        _bottom_lines(writer, result_dirs, aggregate_dir, where, gate, forecast)


def _bottom_lines(
    writer: Writer,
    result_dirs: Mapping[int, Path],
    aggregate_dir: Path | None,
    cwd: Path,
    gate: Decided | None,
    forecast: Sequence[str],
) -> None:
    """The gate's decision, the decision per group, the forecast, then the commands that show
    it, with paths from `cwd`."""
    target = aggregate_dir if aggregate_dir is not None else max(result_dirs.items())[1]
    lines = bottom_line(target)
    if not lines and gate is None and not forecast:
        return
    writer.write_sep("-", "bottom line")
    if gate is not None:
        writer.write_line(gate.headline(), red=not gate.passed, green=gate.passed)
    for line in lines:
        writer.write_line(str(line))
    for said in forecast:
        writer.write_line(f"skill-eval: {said}")
    shown = shlex.quote(shortest_path(target, cwd))
    writer.write_line(f"see it: skill-eval view {shown}")
    writer.write_line(f"        skill-eval report {shown} --html skill-eval-report.html")


def shortest_path(path: Path, cwd: Path) -> str:
    """`path` as typed from `cwd`: relative when that is shorter, else absolute."""
    absolute = str(path.resolve())
    try:
        relative = os.path.relpath(absolute, cwd.resolve())
    except ValueError:  # another drive
        return absolute
    if not relative.startswith("."):
        relative = f".{os.sep}{relative}"
    return relative if len(relative) < len(absolute) else absolute


def _activation_notes(variant_dir: Path) -> list[str]:
    found = read.read_run(variant_dir)
    return [] if found is None else variant_notes(variant_dir, found[1])


def _result_lines(writer: Writer, trial: int, result_dir: Path, unsummarised: str) -> None:
    summary = read.summary_or_none(result_dir)
    state = summary["state"] if summary is not None else unsummarised
    root = sealed_root(result_dir)
    seal = f" seal sha256:{root}" if root is not None else ""
    writer.write_line(f"result {result_dir.name} [{state}] trial {trial}: {result_dir}{seal}")
    resumed = iteration.resumed_line(result_dir)
    if resumed is not None:
        writer.write_line(resumed)
    budget = summary.get("budget") if summary is not None else None
    if budget:
        exhausted = " - budget exhausted" if budget["exhausted"] else ""
        writer.write_line(
            f"  budget: spent {budget['spent']} of {budget['maxCost']} USD{exhausted}"
        )
    for record in read.group_records(result_dir):
        group_dir = layout.record_dir(result_dir, record)
        variants = " ".join(f"{v}={s}" for v, s in record.get("variants", {}).items())
        cost_text = _group_cost(group_dir)
        writer.write_line(
            f"  group {layout.group_dir_name(record['id'], layout.record_host(record))} "
            f"[{record['state']}] {variants} "
            f"grade={record.get('grade')}{cost_text}"
        )
        usage = terminal_line(result_usage(result_dir, record))
        if usage is not None:
            writer.write_line(f"    {usage}")
        for line in iteration.group_lines(result_dir, record):
            writer.write_line(line)
        grade = read.read_grade(group_dir, record)
        if grade is not None:
            for check in grade.get("checks", []):
                writer.write_line(
                    f"    check {check['id']} {check['variant']} {check['kind']}: {check['state']}"
                )
            for comparison in grade.get("comparisons", []):
                writer.write_line(f"    comparison {comparison['id']}: {comparison['transition']}")
            for error in grade.get("errors", []):
                # Reasons can quote file names; keep each one on its own line.
                reason = escape_cell(str(error.get("reason")))
                writer.write_line(f"    grade-error {error.get('id') or 'system'}: {reason}")
        for variant in record.get("variants", {}):
            reused, refused = _reuse(group_dir / variant)
            if reused is not None:
                writer.write_line(f"    {variant} reused from {reused_label(reused)}")
            if refused is not None:
                writer.write_line(f"    {variant} {escape_cell(refused)}")
            for failed in tool_errors(group_dir / variant):
                writer.write_line(f"    {variant} tool-error: {escape_cell(failed)}")
            for note in _activation_notes(group_dir / variant):
                writer.write_line(f"    {variant} {escape_cell(note)}")
            for warned in skill_warning_lines(group_dir / variant):
                writer.write_line(f"    {variant} skill-warning: {escape_cell(warned)}")
        writer.write_line(f"    evidence: {group_dir}")
    for fact in read.cannot_run_facts(read.load_invocation(result_dir)):
        name = layout.group_dir_name(fact["group"], fact["host"])
        writer.write_line(f"  group {name} [skipped] cannot run: {fact['reason']}")
    for line in cross_host_lines(result_dir):
        writer.write_line(line)


def _trial_lines(writer: Writer, trial: int, result_dir: Path) -> None:
    """An adaptive trial: per group, its state, grade, check counts, transitions and result."""
    for record in read.group_records(result_dir):
        group_dir = layout.record_dir(result_dir, record)
        grade: Mapping[str, Any] = read.read_grade(group_dir, record) or {}
        states = [str(check["state"]) for check in grade.get("checks", [])]
        counts = " ".join(f"{state}={states.count(state)}" for state in sorted(set(states)))
        transitions = "".join(
            f" {comparison['id']}={comparison['transition']}"
            for comparison in grade.get("comparisons", [])
        )
        writer.write_line(
            f"trial {trial} group {layout.group_dir_name(record['id'], layout.record_host(record))}"
            f" [{record['state']}] grade={record.get('grade')} checks {counts or 'none'}"
            f"{transitions}{_group_cost(group_dir)} result {result_dir.name}"
        )


def _reuse(variant_dir: Path) -> tuple[Mapping[str, Any] | None, str | None]:
    """Where a reused run was copied from (`run.json`'s `reused`; None for a run made here),
    and why a run chosen for reuse was refused while it was copied (it ran instead), if so."""
    found = read.read_run(variant_dir)
    marker = found[1].get("reused") if found is not None else None
    refused = found[1].get("notReused") if found is not None else None
    copying = isinstance(refused, str) and refused.startswith(REFUSED_COPY)
    return (
        marker if isinstance(marker, Mapping) else None,
        refused if copying and isinstance(refused, str) else None,
    )


def _group_cost(group_dir: Path) -> str:
    """ " cost=$X" spent by the group's runs, and " cost=simulated $Y" for what was priced only."""
    spent: list[float] = []
    simulated: list[float] = []
    for variant in VARIANTS:
        found = read.read_run(group_dir / variant)
        # A reused run's spend was paid by the result it was copied from.
        reused = found is None or "reused" in found[1]
        spend = run_spend(found[1]) if found is not None and not reused else None
        if spend is not None:
            (simulated if spend[1] else spent).append(spend[0])
    parts = [f" cost=${sum(spent):.6f}"] if spent else []
    if simulated:
        parts.append(f" cost=simulated ${sum(simulated):.6f}")
    return "".join(parts)


def _aggregate_lines(writer: Writer, aggregate_dir: Path) -> None:
    data = read.load_aggregate(aggregate_dir)
    writer.write_line(
        f"aggregate {data['id']} [{data['state']}] trials="
        f"{len(data['trials'])}/{data['requestedTrials']}{_auto(data)}: {aggregate_dir}"
    )
    for group in data.get("groups") or []:
        label = layout.group_dir_name(group["id"], layout.record_host(group))
        if "adaptive" in group:
            writer.write_line(
                f"  {label}: {counted(group['adaptive']['trialsUsed'], 'trial')}, "
                f"stopped by {group['adaptive']['stop']}"
            )
        for check in group["checks"]:
            interval = check.get("interval")
            span = f" 95% CI [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""
            figures = "".join(
                f" pass@{row['k']}={row['passAtK']:.2f} pass^{row['k']}={row['passHatK']:.2f}"
                for row in consistency_of(check)
                if row["k"] > 1
            )
            passed, failed, unavailable = check["pass"], check["fail"], check["unavailable"]
            observed = (passed or 0) + (failed or 0) + (unavailable or 0)
            writer.write_line(
                f"  {label} check {check['id']}: pass {passed}/{observed}{span}{figures}"
            )
        for comparison in group["comparisons"]:
            verdict = (
                f"difference unresolved; {sample_size_text(comparison)}"
                if comparison["differenceUnresolved"]
                else "difference resolved"
            )
            writer.write_line(
                f"  {label} comparison {comparison['id']}: "
                f"fail-to-pass={comparison['discordant']['fail-to-pass']} "
                f"pass-to-fail={comparison['discordant']['pass-to-fail']} "
                f"{p_value_text(comparison)} ({verdict})"
            )
            sequential = sequential_text(comparison)
            if sequential is not None:
                writer.write_line(f"    {sequential}")
        usage = terminal_line(group.get("usage"))
        if usage is not None:
            writer.write_line(f"  {label} {usage}")
    for line in noise_floor_lines(data):
        writer.write_line(line)
    for line in trigger_terminal_lines(aggregate_trigger_rates(data)):
        writer.write_line(line)
    for line in aggregate_cross_host_lines(data):
        writer.write_line(line)


def _auto(data: Mapping[str, object]) -> str:
    """` (auto: …)` for adaptive trials: how many ran of the most allowed."""
    adaptive = data.get("adaptive")
    if not isinstance(adaptive, Mapping):
        return ""
    return f" (auto, at most {adaptive.get('maxTrials')}; {adaptive.get('method')})"
