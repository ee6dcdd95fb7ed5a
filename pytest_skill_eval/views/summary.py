"""`skill-eval summary --markdown`: a decision-first summary for pull requests and CI job pages.

Rendered from the sealed result (or aggregate) alone: the bottom line per group, a table of
checks per variant, rates with Wilson intervals across trials, spend, the seal root and a link
to the HTML report. A pull request page may be public, so by default it never shows agent
output or workspace content: only ids, kinds, states, counts and hashes. Every field is text
a result directory holds (an artifact may come from an untrusted job), so each is shown through
`gfm.md_text`: no link, mention, reference, HTML or cell break on GitHub. `excerpts=True`
(`--excerpts`) adds the bounded excerpt each failed text check recorded, which is agent output or
workspace text, each in a fenced code block: for private pages only. A check a noise
floor found flaky is marked as such (it does not gate).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analysis import noise_floor
from ..definitions import VARIANTS
from ..errors import OutputError
from ..evidence import layout, read, sealed_root
from ..evidence.iteration import unchanged_groups, unchanged_line
from .decision import bottom_line
from .gfm import md_code_block, md_text
from .present import cost_label, excerpt_of, format_interval, format_number, rate_of, run_spend
from .usage import by_group

DEFAULT_REPORT_URL = "report.html"

__all__ = ["DEFAULT_REPORT_URL", "append_step_summary", "md_text", "render_markdown"]


def render_markdown(
    target: Path, *, report_url: str = DEFAULT_REPORT_URL, excerpts: bool = False
) -> str:
    """The Markdown summary of a result or aggregate directory; ends with a newline."""
    aggregate = read.is_aggregate(target)
    if aggregate:
        data: Mapping[str, Any] = read.load_aggregate(target)
        title = f"aggregate {data.get('id', target.name)} [{data.get('state')}]"
    else:
        summary = read.load_summary(target)
        title = f"result {summary.get('id', target.name)} [{summary.get('state')}]"
    lines = [f"## skill-eval: {md_text(title)}", "", "**Bottom line**", ""]
    decided = bottom_line(target)
    lines.extend(f"- **{md_text(d.group)}**: {md_text(d.text)}" for d in decided)
    if not decided:
        lines.append("- no group ran")
    lines.append("")
    lines.extend(_aggregate_table(data) if aggregate else _result_table(target))
    lines.append("")
    unchanged = [] if aggregate else unchanged_groups(read.load_invocation(target))
    if unchanged:
        lines.extend(["**Not run** (inputs unchanged since an earlier result)", ""])
        lines.extend(f"- {md_text(unchanged_line(u))}" for u in unchanged)
        lines.append("")
    if excerpts and not aggregate:
        lines.extend(_excerpts(target))
    trial_dirs = _trial_dirs(target, data) if aggregate else [target]
    lines.extend(decided_by(_floor_lines(trial_dirs)))
    groups = data.get("groups") or [] if aggregate else read.group_records(target)
    lines.extend(_usage_table(target, groups, aggregate))
    lines.append(f"**Spend:** {md_text(_spend(trial_dirs))}")
    lines.append("")
    for trial in trial_dirs:
        root = sealed_root(trial)
        shown = "none (unsealed)" if root is None else _root(root)
        lines.append(f"- seal of {md_text(trial.name)}: {shown}")
    lines.extend(["", f"[HTML report]({_link(report_url)})", ""])
    return "\n".join(lines)


def append_step_summary(target: Path, summary_file: str, gate: Sequence[str] = ()) -> None:
    """Append the summary of `target` to a CI job page's summary file (`GITHUB_STEP_SUMMARY`),
    with the lines of the significance gate that ran on it (`gate`), if any."""
    text = "\n".join([render_markdown(target), *decided_by(gate)])
    try:
        with open(summary_file, "a", encoding="utf-8") as out:
            out.write(text + "\n")
    except OSError as error:
        raise OutputError(
            f"GITHUB_STEP_SUMMARY: cannot append to {summary_file}: {error.strerror or error}; "
            "unset it or point it at a writable file"
        ) from None


def decided_by(lines: Sequence[str]) -> list[str]:
    """A section naming what decided what gates (the noise floor, the results the gate pooled,
    by id and seal root) and what was set aside, one item per line; empty without lines."""
    if not lines:
        return []
    return ["**Decided by**", "", *(f"- {md_text(line)}" for line in lines), ""]


def _floor_lines(trial_dirs: list[Path]) -> list[str]:
    """The noise floor the (first) trial's invocation names as deciding, and what it set aside."""
    return noise_floor.decided_lines(read.load_invocation(trial_dirs[0])) if trial_dirs else []


def _result_table(result_dir: Path) -> list[str]:
    """Checks of every group: one row per check, its state under its variant."""
    lines = ["| group | check | kind | baseline | candidate |", "|---|---|---|---|---|"]
    flaky = noise_floor.recorded_flaky(result_dir)
    for label, checks, state in _graded(result_dir):
        if not checks:
            lines.append(_cells(label, "(no checks)", "", state, ""))
        for check in checks:
            shown = str(check.get("state"))
            if noise_floor.check_key(label, str(check.get("id"))) in flaky:
                shown += " (flaky: does not gate)"
            states = [shown if check.get("variant") == v else "" for v in VARIANTS]
            lines.append(_cells(label, str(check.get("id")), str(check.get("kind")), *states))
    return lines


def _graded(result_dir: Path) -> list[tuple[str, list[Mapping[str, Any]], str]]:
    """Each group's label, its graded checks and its state."""
    graded: list[tuple[str, list[Mapping[str, Any]], str]] = []
    for record in read.group_records(result_dir):
        label = layout.group_dir_name(str(record["id"]), layout.record_host(record))
        grade = read.read_grade(layout.record_dir(result_dir, record), record)
        found = grade.get("checks") if grade is not None else None
        checks: list[Mapping[str, Any]] = [c for c in found or [] if isinstance(c, Mapping)]
        graded.append((label, checks, str(record.get("state"))))
    return graded


def _excerpts(result_dir: Path) -> list[str]:
    """What each failed text check observed around its expectation (bounded): each in a fenced
    code block, where GitHub makes no link, mention or reference of it."""
    lines = []
    for label, checks, _state in _graded(result_dir):
        for check in checks:
            excerpt = excerpt_of(check)
            if excerpt is not None:
                lines.append(f"- {md_text(label)} / {md_text(str(check.get('id')))}:")
                lines.extend(["", *md_code_block(excerpt, indent="  ")])
    return ["**What failed text checks observed**", "", *lines, ""] if lines else []


def _aggregate_table(data: Mapping[str, Any]) -> list[str]:
    """Checks across trials: passes, the pass rate and its 95% Wilson interval per variant."""
    lines = ["| group | check | kind | baseline | candidate |", "|---|---|---|---|---|"]
    floor = data.get("noiseFloor")
    flaky = noise_floor.flaky_keys(floor) if isinstance(floor, Mapping) else []
    for group in data.get("groups") or []:
        label = layout.group_dir_name(str(group.get("id")), layout.record_host(group))
        for check in group.get("checks") or []:
            rate = rate_of(check)
            shown = (
                f"{rate.passes}/{rate.total} pass, rate {format_number(rate.rate)} "
                f"(95% CI {format_interval(rate.interval)})"
            )
            if noise_floor.check_key(label, str(check.get("id"))) in flaky:
                shown += "; flaky"
            states = [shown if check.get("variant") == v else "" for v in VARIANTS]
            lines.append(_cells(label, str(check.get("id")), str(check.get("kind")), *states))
    return lines


def _usage_table(target: Path, groups: Any, aggregate: bool) -> list[str]:
    """Per-arm usage: each fact's mean (95% CI across trials) per variant, and the change."""
    found = by_group(target, groups, aggregate)
    if not found:
        return []
    lines = [
        "**Usage per arm**" + (" (cost simulated)" if any(s for *_, s in found) else ""),
        "",
        "| group | usage | baseline | candidate | baseline→candidate |",
        "|---|---|---|---|---|",
    ]
    for label, rows, _simulated in found:
        lines.extend(_cells(label, r.fact, r.baseline, r.candidate, r.change) for r in rows)
    return [*lines, ""]


def _cells(*cells: str) -> str:
    return "| " + " | ".join(md_text(c) for c in cells) + " |"


def _trial_dirs(aggregate_dir: Path, data: Mapping[str, Any]) -> list[Path]:
    found = []
    for trial in data.get("trials") or []:
        if isinstance(trial, Mapping) and (aggregate_dir.parent / str(trial.get("id"))).is_dir():
            found.append(aggregate_dir.parent / str(trial.get("id")))
    return found


def _spend(result_dirs: list[Path]) -> str:
    """What the runs cost: spent and simulated (priced, never paid) apart."""
    spent, simulated = 0.0, 0.0
    for result_dir in result_dirs:
        for record in read.group_records(result_dir):
            for variant in VARIANTS:
                found = read.read_run(layout.record_dir(result_dir, record) / variant)
                spend = run_spend(found[1]) if found is not None else None
                if spend is not None and spend[1]:
                    simulated += spend[0]
                elif spend is not None:
                    spent += spend[0]
    parts = [cost_label(round(spent, 6), False)]
    if simulated:
        parts.append(cost_label(round(simulated, 6), True))
    return ", ".join(parts)


def _root(root: str) -> str:
    """A seal root as code, when it is one; anything else a forged seal holds as text."""
    if len(root) == 64 and all(c in "0123456789abcdef" for c in root):
        return f"`sha256:{root}`"
    return md_text(f"sha256:{root}")


def _link(url: str) -> str:
    """A link destination that stays one: `<...>` with its angle brackets escaped."""
    flat = url.replace("\r", "%0D").replace("\n", "%0A")
    return "<" + flat.replace("\\", "\\\\").replace("<", "\\<").replace(">", "\\>") + ">"
