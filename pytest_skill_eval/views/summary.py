"""`skill-eval summary --markdown`: a decision-first summary for pull requests and CI job pages.

Rendered from the sealed result (or aggregate) alone: the significance gate's decision and the
bottom line per group, one row per comparison (`summary_tables.py`), the cross-host table, and
folded in `<details>` the checks that did not pass, usage, what decided, spend and seal roots,
then a link to the HTML report. A pull request page may be public, so by default it never shows
agent output or workspace content: only ids, kinds, states, counts and hashes. Every field is text
a result directory holds (an artifact may come from an untrusted job), so each is shown through
`gfm.md_text`: no link, mention, reference, HTML or cell break on GitHub. `excerpts=True`
(`--excerpts`) adds the bounded excerpt each failed text check recorded, which is agent output or
workspace text, each in a fenced code block: for private pages only. A check a noise
floor found flaky is marked as such (it does not gate).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analysis import noise_floor
from ..analysis.gate_decision import recorded_decision
from ..definitions import VARIANTS
from ..errors import OutputError
from ..evidence import layout, read, sealed_root
from ..evidence.iteration import unchanged_groups, unchanged_line
from . import summary_tables as tables
from .decision import Decided, bottom_line
from .gfm import md_code_block, md_text
from .present import cost_label, excerpt_of, run_spend

DEFAULT_REPORT_URL = "report.html"
GATE_LABEL = "significance gate"
FOLD = ("<details><summary>", "</summary>", "</details>")  # the only HTML the summary writes

__all__ = ["DEFAULT_REPORT_URL", "append_step_summary", "md_text", "render_markdown"]


@read.read_once()
def render_markdown(
    target: Path,
    *,
    report_url: str = DEFAULT_REPORT_URL,
    excerpts: bool = False,
    gate: Decided | None = None,
) -> str:
    """The Markdown summary of a result or aggregate directory; ends with a newline.

    The decision first: the significance gate's (`gate`, or the one the run recorded it ran
    under, decided again from the evidence), then each group's; then one row per comparison and
    the cross-host table; the checks that did not pass, usage, what decided and the seals are
    folded in `<details>`. The HTML report holds the full tables.
    """
    aggregate = read.is_aggregate(target)
    if aggregate:
        data: Mapping[str, Any] = read.load_aggregate(target)
        title = f"aggregate {data.get('id', target.name)} [{data.get('state')}]"
    else:
        summary = read.load_summary(target)
        title = f"result {summary.get('id', target.name)} [{summary.get('state')}]"
    gate = gate if gate is not None else recorded_decision(target)
    lines = [f"## skill-eval: {md_text(title)}", "", "**Bottom line**", ""]
    if gate is not None:
        lines.append(f"- **{GATE_LABEL}**: {md_text(gate.headline())}")
    lines.extend(_bottom_lines(target))
    lines.append("")
    groups = data.get("groups") or [] if aggregate else read.group_records(target)
    hosts = tables.hosts_of(groups)
    lines.extend(_comparisons(target, data if aggregate else None, hosts))
    lines.extend(_cross_host(target, data if aggregate else None))
    unchanged = [] if aggregate else unchanged_groups(read.load_invocation(target))
    if unchanged:
        lines.extend(["**Not run** (inputs unchanged since an earlier result)", ""])
        lines.extend(f"- {md_text(unchanged_line(u))}" for u in unchanged)
        lines.append("")
    lines.extend(_checks(target, data if aggregate else None, hosts))
    if excerpts and not aggregate:
        lines.extend(_excerpts(target))
    trial_dirs = _trial_dirs(target, data) if aggregate else [target]
    lines.extend(_usage_table(target, groups, aggregate, hosts))
    gate_lines = gate.lines() if gate is not None else []
    lines.extend(_folded("Decided by, spend and seals", _evidence(trial_dirs, gate_lines)))
    lines.extend([f"[HTML report]({_link(report_url)})", ""])
    return "\n".join(lines)


def append_step_summary(target: Path, summary_file: str, gate: Decided | None = None) -> None:
    """Append the summary of `target` to a CI job page's summary file (`GITHUB_STEP_SUMMARY`),
    led by the decision of the significance gate that ran on it (`gate`), if any."""
    text = render_markdown(target, gate=gate)
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


def _bottom_lines(target: Path) -> list[str]:
    """Each group's decision; a group run on several hosts that decided alike on some of them
    is one line naming those hosts."""
    by_group: dict[str, dict[str, list[str]]] = {}
    labels: dict[str, str] = {}
    for line in bottom_line(target):
        group_id, host = layout.split_group_dir_name(line.group)
        by_group.setdefault(group_id, {}).setdefault(line.text, []).append(host)
        labels[group_id] = line.group
    if not by_group:
        return ["- no group ran"]
    lines = []
    for group_id, decided in by_group.items():
        if sum(map(len, decided.values())) == 1:
            lines.append(f"- **{md_text(labels[group_id])}**: {md_text(next(iter(decided)))}")
            continue
        lines.extend(
            f"- **{md_text(group_id)}** on {md_text(', '.join(hosts))}: {md_text(text)}"
            for text, hosts in decided.items()
        )
    return lines


def _comparisons(
    target: Path, data: Mapping[str, Any] | None, hosts: Mapping[str, list[str]]
) -> list[str]:
    found = (
        tables.aggregate_comparisons(data)
        if data is not None
        else tables.result_comparisons(target)
    )
    rows = tables.merge_hosts(found, hosts)
    if not rows:
        return []
    return ["**Comparisons**", "", *_table(tables.COMPARISON_HEADER, rows), ""]


def _cross_host(target: Path, data: Mapping[str, Any] | None) -> list[str]:
    hosts, rows = tables.cross_host(target, data)
    if not rows:
        return []
    header = ("group", "row", *hosts, "across hosts")
    title = "**Across hosts** (comparisons, and the checks that differ)"
    return [title, "", *_table(header, rows), ""]


def _checks(
    target: Path, data: Mapping[str, Any] | None, hosts: Mapping[str, list[str]]
) -> list[str]:
    total, found = tables.open_checks(target, data)
    rows = tables.merge_hosts(found, hosts)
    if not total:
        return []
    passed = "every check passed" if not rows else f"{len(found)} of {total} checks did not pass"
    if not rows:
        return [f"**Checks:** {md_text(f'{total} checks, {passed}')}", ""]
    return _folded(f"Checks: {passed}", _table(tables.CHECK_HEADER, rows))


def _usage_table(
    target: Path, groups: Any, aggregate: bool, hosts: Mapping[str, list[str]]
) -> list[str]:
    """Per group, the arms' means of the facts the terminal shows and their ratio."""
    simulated, found = tables.usage(target, groups, aggregate)
    rows = tables.merge_hosts(found, hosts)
    if not rows:
        return []
    title = "Usage per arm, baseline→candidate" + (" (cost simulated)" if simulated else "")
    return _folded(title, _table(tables.USAGE_HEADER, rows))


def _evidence(trial_dirs: list[Path], gate_lines: Sequence[str]) -> list[str]:
    lines = decided_by([*_floor_lines(trial_dirs), *gate_lines])
    lines.extend([f"**Spend:** {md_text(_spend(trial_dirs))}", ""])
    for trial in trial_dirs:
        root = sealed_root(trial)
        shown = "none (unsealed)" if root is None else _root(root)
        lines.append(f"- seal of {md_text(trial.name)}: {shown}")
    return lines


def _folded(title: str, body: Sequence[str]) -> list[str]:
    """`body` folded under `title`: a `<details>` block. The title is the summary's own words
    and counts, never a field of the result, and is HTML-escaped (it stands in raw HTML, where
    Markdown escapes do not apply); the body, after a blank line, is Markdown again."""
    opening = "".join([FOLD[0], html.escape(title), FOLD[1]])
    return [opening, "", *body, "", FOLD[2], ""]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [_cells(*header), "|" + "---|" * len(header), *(_cells(*row) for row in rows)]


def _floor_lines(trial_dirs: list[Path]) -> list[str]:
    """The noise floor the (first) trial's invocation names as deciding, and what it set aside."""
    return noise_floor.decided_lines(read.load_invocation(trial_dirs[0])) if trial_dirs else []


def _excerpts(result_dir: Path) -> list[str]:
    """What each failed text check observed around its expectation (bounded): each in a fenced
    code block, where GitHub makes no link, mention or reference of it."""
    lines = []
    for label, checks, _comparisons in tables.graded(result_dir):
        for check in checks:
            excerpt = excerpt_of(check)
            if excerpt is not None:
                lines.append(f"- {md_text(label)} / {md_text(str(check.get('id')))}:")
                lines.extend(["", *md_code_block(excerpt, indent="  ")])
    return ["**What failed text checks observed**", "", *lines, ""] if lines else []


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
