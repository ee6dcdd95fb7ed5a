"""The self-contained HTML report of a result or an aggregate: no network, works from file://.

Every piece of agent or author text is escaped; control characters are shown as visible symbols
(a raw CR would otherwise become a line break in HTML). Turns, files and long texts sit in
`<details>` elements that start collapsed, so large transcripts stay usable without scripts.
"""

from __future__ import annotations

import difflib
import html
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .text import (
    VARIANTS,
    GroupEvidence,
    Rate,
    ViewError,
    artifact_paths,
    changes_of,
    comparison_stats,
    declared_turns,
    escape_cell,
    format_number,
    is_aggregate,
    load_group,
    load_summary,
    mapping,
    rate_of,
    read_json_file,
    selected_grade_state,
    tool_names,
)

CLIP_CHARS = 3000
CLIP_LINES = 40
DIFF_LINES = 400
DIFF_MAX_BYTES = 2 * 1024 * 1024
_NONE = '<span class="muted">none</span>'
MODE_LABELS = {"scripted": "scripted", "replay": "replayed", "record": "recorded", "live": "live"}

# Control characters (other than TAB and LF) become their visible Unicode control pictures.
_CONTROL = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}
_CONTROL[0x7F] = "\u2421"

STYLE = """
:root { --pass:#1a7f37; --fail:#cf222e; --muted:#57606a; --line:#d0d7de; --bg2:#f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
  padding: 1rem 1.5rem 4rem; max-width: 1600px; color: #1f2328; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; margin: 0 0 .5rem; }
h3 { font-size: 1.05rem; margin: 1rem 0 .4rem; } h4 { font-size: .95rem; margin: .9rem 0 .3rem; }
h5 { font-size: .85rem; margin: .6rem 0 .2rem; color: var(--muted); }
code, pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: var(--bg2); border: 1px solid var(--line); border-radius: 4px; padding: .5rem;
  margin: .2rem 0; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 40rem;
  overflow: auto; }
table { border-collapse: collapse; width: 100%; margin: .3rem 0; table-layout: fixed; }
th, td { border: 1px solid var(--line); padding: .25rem .4rem; text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
th { background: var(--bg2); font-weight: 600; }
td pre { max-height: 16rem; }
section.group { border-top: 3px solid var(--line); margin-top: 2rem; padding-top: 1rem; }
.variants { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; align-items: start; }
.variant { border: 1px solid var(--line); border-radius: 6px; padding: .6rem .8rem; min-width: 0; }
.badge { display: inline-block; border-radius: 1em; padding: 0 .6em; font-size: .8rem;
  border: 1px solid var(--line); background: var(--bg2); vertical-align: middle; }
.s-complete, .s-pass, .s-succeeded, .s-pass-to-pass, .s-fail-to-pass {
  color: var(--pass); border-color: var(--pass); }
.s-fail, .s-pass-to-fail, .s-fail-to-fail, .s-grade-error, .s-invalid,
.s-infrastructure-failed, .s-cancelled, .s-failed { color: var(--fail); border-color: var(--fail); }
.s-unavailable, .s-not-selected, .s-incomplete { color: var(--muted); }
.mode { background: #fff8c5; border-color: #d4a72c; }
.advisory { border-left: 4px solid #d4a72c; padding-left: .6rem; }
details { margin: .3rem 0; }
details > summary { cursor: pointer; }
details.turn, details.file { border: 1px solid var(--line); border-radius: 4px;
  padding: .2rem .5rem; }
.meta, .muted, .empty { color: var(--muted); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .8rem;
  margin: .3rem 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.diff .add { background: #dafbe1; } .diff .del { background: #ffebe9; }
.diff .hunk { color: #8250df; } .diff .hdr { color: var(--muted); }
.links a, .links span { margin-right: .8rem; }
.missing { color: var(--fail); }
.bar { position: relative; display: inline-block; width: 8rem; height: .7rem;
  background: var(--bg2); border: 1px solid var(--line); vertical-align: middle; }
.bar .ci { position: absolute; top: 0; bottom: 0; background: #a5d6ff; }
.bar .pt { position: absolute; top: -2px; bottom: -2px; width: 2px; background: #0969da; }
nav ul { columns: 2; }
@media (max-width: 900px) { .variants { grid-template-columns: 1fr; } }
"""


def esc(value: Any) -> str:
    """HTML-escape any value; control characters become visible, lone surrogates `?`."""
    text = value if isinstance(value, str) else str(value)
    text = text.encode("utf-8", "replace").decode("utf-8").translate(_CONTROL)
    return html.escape(text, quote=True)


def _badge(label: Any, state: Any = None, title: str | None = None) -> str:
    css = f"badge s-{esc(state)}" if state is not None else "badge"
    attr = f' title="{esc(title)}"' if title else ""
    return f'<span class="{css}"{attr}>{esc(label)}</span>'


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _lines(text: str) -> list[str]:
    """Lines with their LF kept (CR stays part of the line: it is content, and is shown)."""
    parts = text.split("\n")
    found = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        found.append(parts[-1])
    return found


def clipped(text: str, css: str = "text") -> str:
    """A `<pre>` of the text, cut at CLIP_LINES/CLIP_CHARS with the full text in `<details>`."""
    if text == "":
        return '<p class="empty">(empty)</p>'
    lines = text.split("\n")
    if len(text) <= CLIP_CHARS and len(lines) <= CLIP_LINES:
        return f'<pre class="{css}">{esc(text)}</pre>'
    head = "\n".join(lines[:CLIP_LINES])[:CLIP_CHARS]
    return (
        f'<pre class="{css} clipped">{esc(head)}\n…</pre>'
        f'<details class="full"><summary>show all {len(text)} characters, '
        f"{len(lines)} lines</summary>"
        f'<pre class="{css}">{esc(text)}</pre></details>'
    )


class _Links:
    """Relative links from the report's location to evidence inside the result directory."""

    def __init__(self, result_dir: Path, link_base: Path) -> None:
        self.result_dir = result_dir
        self.link_base = link_base

    def href(self, target: Path, directory: bool = False) -> str:
        rel = os.path.relpath(target, self.link_base).replace(os.sep, "/")
        # Quoting every ':' means no path can ever read as a URL scheme.
        return esc(quote(rel, safe="/") + ("/" if directory else ""))

    def anchor(self, label: str, target: Path) -> str:
        if not target.exists() and not target.is_symlink():
            return f'<span class="missing" title="not on disk">{esc(label)} (missing)</span>'
        return f'<a href="{self.href(target, target.is_dir())}">{esc(label)}</a>'


# ---------------------------------------------------------------------------------------------
# Documents


def render_html(result_dir: Path, *, link_base: Path | None = None) -> str:
    """One self-contained HTML document for a result or an aggregate directory.

    Links to raw artifacts are relative to `link_base`, the directory the report will be
    saved in (default: the result directory itself).
    """
    result_dir = Path(result_dir).resolve()
    links = _Links(result_dir, Path(link_base).resolve() if link_base else result_dir)
    if is_aggregate(result_dir):
        return _aggregate_document(result_dir, links)
    return _result_document(result_dir, links)


def _document(title: str, body: Iterable[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            # Nothing may load from anywhere: the report is one file and stays offline.
            '<meta http-equiv="Content-Security-Policy" '
            "content=\"default-src 'none'; style-src 'unsafe-inline'\">",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


def _result_document(result_dir: Path, links: _Links) -> str:
    summary = load_summary(result_dir)
    groups = [load_group(result_dir, g) for g in summary["groups"] if isinstance(g, dict)]
    result_id = summary.get("id", result_dir.name)
    body = [
        f"<h1>skill-eval result <code>{esc(result_id)}</code> "
        f"{_badge(summary.get('state'), summary.get('state'))}</h1>",
        '<dl class="facts">',
        f"<dt>path</dt><dd><code>{esc(result_dir)}</code></dd>",
        f"<dt>trial</dt><dd>{esc(summary.get('trial', 1))}</dd>",
        f"<dt>completed</dt><dd>{esc(summary.get('completedAt', 'unknown'))}</dd>",
    ]
    invocation_path = result_dir / "invocation.json"
    if invocation_path.is_file():
        invocation = mapping(read_json_file(invocation_path))
        for definition in map(mapping, invocation.get("definitions") or []):
            body.append(
                f"<dt>definition</dt><dd><code>{esc(definition.get('path'))}</code> "
                f"({esc(definition.get('kind'))} {esc(definition.get('id'))})</dd>"
            )
    body.append(_budget_facts(summary.get("budget")))
    body.append("</dl>")
    body.append(
        '<p class="links">raw: '
        + links.anchor("summary.json", result_dir / "summary.json")
        + links.anchor("invocation.json", invocation_path)
        + "</p>"
    )
    body.append("<nav><h2>Groups</h2><ul>")
    for group in groups:
        record = group.record
        body.append(
            f'<li><a href="#group-{esc(group.id)}">{esc(group.id)}</a> '
            f"{_badge(record.get('state'), record.get('state'))} "
            f"grade {_badge(record.get('grade'), record.get('grade'))}</li>"
        )
    body.append("</ul></nav>")
    for group in groups:
        body.extend(_group_section(result_dir, group, links))
    return _document(f"skill-eval result {result_id}", body)


def _budget_facts(budget: Any) -> str:
    if not isinstance(budget, Mapping):
        return ""
    exhausted = " — budget exhausted" if budget.get("exhausted") else ""
    return (
        f"<dt>budget</dt><dd>spent ${esc(format_number(budget.get('spent')))} of "
        f"${esc(format_number(budget.get('maxCost')))}{esc(exhausted)}</dd>"
    )


# ---------------------------------------------------------------------------------------------
# One group


def _group_section(result_dir: Path, group: GroupEvidence, links: _Links) -> list[str]:
    record, definition, grade = group.record, group.definition, group.grade or {}
    first_run = group.runs.get("baseline") or group.runs.get("candidate")
    group_type = definition.get("type") or (first_run or {}).get("evaluationType")
    grade_state = selected_grade_state(group, None)
    states = mapping(record.get("variants"))
    out = [
        f'<section class="group" id="group-{esc(group.id)}">',
        f"<h2>Group <code>{esc(group.id)}</code> "
        f"{_badge(record.get('state'), record.get('state'))} "
        f"{_badge(group_type)} grade {_badge(grade_state, grade_state)}</h2>",
        f'<p class="meta">position {esc(record.get("position"))} · '
        + " · ".join(f"{v} {_badge(states.get(v), states.get(v))}" for v in VARIANTS)
        + "</p>",
    ]
    turns = declared_turns(definition, first_run)
    out.append(f"<h3>Declared {'turns' if len(turns) > 1 else 'prompt'}</h3><ol>")
    out.extend(f"<li>{clipped(t)}</li>" for t in turns)
    out.append("</ol>")
    questions = definition.get("review_questions") or []
    if questions:
        out.append("<h3>Review questions</h3><ul>")
        out.extend(f"<li>{esc(q)}</li>" for q in questions)
        out.append("</ul>")
    out.extend(_checks_table(grade.get("checks") or []))
    errors = [e for e in grade.get("errors") or [] if isinstance(e, Mapping)]
    if errors:
        out.append("<h3>Grade errors</h3><table><tr><th>expectation</th><th>reason</th></tr>")
        out.extend(
            f"<tr><td><code>{esc(e.get('id') or 'system')}</code></td>"
            f"<td>{clipped(str(e.get('reason')))}</td></tr>"
            for e in errors
        )
        out.append("</table>")
    group_errors = [e for e in record.get("errors") or [] if isinstance(e, Mapping)]
    if group_errors:
        out.append("<h3>Group errors</h3><table><tr><th>artifact or kind</th><th>message</th></tr>")
        out.extend(
            f"<tr><td>{esc(e.get('artifact') or e.get('kind'))}</td>"
            f"<td>{clipped(str(e.get('message')))}</td></tr>"
            for e in group_errors
        )
        out.append("</table>")
    out.extend(_comparisons_table(grade.get("comparisons") or []))
    out.extend(_review_block(group.review))
    out.append('<div class="variants">')
    for variant in VARIANTS:
        out.extend(_variant_block(result_dir, group, variant, links))
    out.append("</div>")
    gdir = group.directory
    group_links = [
        links.anchor("definition.json", gdir / "definition.json"),
        links.anchor(str(group.grade_file), gdir / str(group.grade_file)),
        links.anchor(group.group_file, gdir / group.group_file),
        links.anchor("manifest.json", gdir / "manifest.json"),
    ]
    if (gdir / "resources" / "fixture").is_dir():
        group_links.append(links.anchor("fixture/", gdir / "resources" / "fixture"))
    if (gdir / "semantic-grade.json").is_file():
        group_links.append(links.anchor("semantic-grade.json", gdir / "semantic-grade.json"))
    out.append(f'<p class="links">raw: {"".join(group_links)}</p>')
    out.append("</section>")
    return out


def _checks_table(checks: Sequence[Mapping[str, Any]]) -> list[str]:
    out = ["<h3>Checks</h3>"]
    if not checks:
        return [*out, '<p class="empty">(no checks)</p>']
    out.append(
        '<table class="checks"><colgroup><col style="width:14%"><col style="width:8%">'
        '<col style="width:9%"><col style="width:7%"><col><col></colgroup>'
        "<tr><th>check</th><th>variant</th><th>kind</th><th>state</th>"
        "<th>expected</th><th>observed</th></tr>"
    )
    for check in checks:
        state = check.get("state")
        out.append(
            f"<tr><td><code>{esc(check.get('id'))}</code></td><td>{esc(check.get('variant'))}</td>"
            f"<td>{esc(check.get('kind'))}</td><td>{_badge(state, state)}</td>"
            f"<td>{clipped(_pretty(check.get('expected')), 'json')}</td>"
            f"<td>{clipped(_pretty(check.get('observed')), 'json')}</td></tr>"
        )
    out.append("</table>")
    return out


def _comparisons_table(comparisons: Sequence[Mapping[str, Any]]) -> list[str]:
    if not comparisons:
        return []
    out = [
        "<h3>Comparisons</h3><table><tr><th>comparison</th><th>kind</th>"
        "<th>baseline</th><th>candidate</th><th>transition</th></tr>"
    ]
    for comparison in comparisons:
        cells = []
        for side in VARIANTS:
            data = comparison.get(side) or {}
            cells.append(
                f"<td><code>{esc(data.get('check'))}</code> "
                f"{_badge(data.get('state'), data.get('state'))}</td>"
            )
        transition = comparison.get("transition")
        out.append(
            f"<tr><td><code>{esc(comparison.get('id'))}</code></td>"
            f"<td>{esc(comparison.get('kind'))}</td>{''.join(cells)}"
            f"<td>{_badge(transition, transition)}</td></tr>"
        )
    out.append("</table>")
    return out


def _review_block(review: Mapping[str, Any] | None) -> list[str]:
    if not isinstance(review, Mapping):
        return []
    out = [
        '<div class="advisory">',
        f"<h3>Advisory review {_badge(review.get('state'), review.get('state'))} "
        f'<span class="muted">model {esc(review.get("model"))} — not canonical '
        "evidence</span></h3>",
        "<table><tr><th>question</th><th>baseline</th><th>candidate</th><th>rationale</th></tr>",
    ]
    for answer in review.get("answers") or []:
        if isinstance(answer, Mapping):
            out.append(
                f"<tr><td>{esc(answer.get('question'))}</td><td>{esc(answer.get('baseline'))}</td>"
                f"<td>{esc(answer.get('candidate'))}</td><td>{esc(answer.get('rationale'))}</td></tr>"
            )
    out.append("</table>")
    out.extend(f'<p class="missing">{esc(e)}</p>' for e in review.get("errors") or [])
    out.append("</div>")
    return out


# ---------------------------------------------------------------------------------------------
# One variant


def _variant_block(
    result_dir: Path, group: GroupEvidence, variant: str, links: _Links
) -> list[str]:
    run = group.runs.get(variant)
    if run is None:
        return [
            f'<article class="variant"><h3>{variant.capitalize()} {_badge("missing", "fail")}</h3>',
            '<p class="missing">run.json is missing</p></article>',
        ]
    state = run.get("state")
    out = [
        f'<article class="variant {esc(variant)}">',
        f"<h3>{variant.capitalize()} {_badge(state, state)} {_mode_badge(run)}</h3>",
        '<dl class="facts">',
    ]
    out.extend(_run_facts(run))
    out.append("</dl>")
    raw = [
        links.anchor(name if name != "run" else Path(path).name, result_dir / path)
        for name, path in artifact_paths(result_dir, group, variant, run)
    ]
    out.append(f'<p class="links">raw: {"".join(raw)}</p>')
    transcript = _transcript(group.directory / variant, run)
    turns = [t for t in run.get("turns") or [] if isinstance(t, Mapping)]
    out.append(f"<h4>Turns ({len(turns)})</h4>")
    if not turns:
        out.append('<p class="empty">(no turns were run)</p>')
    for turn in turns:
        out.extend(_turn_details(turn, transcript))
    out.extend(_changed_files(group, variant, run))
    out.append("</article>")
    return out


def _mode_badge(run: Mapping[str, Any]) -> str:
    provider = run.get("provider")
    if not isinstance(provider, Mapping) or not provider.get("mode"):
        return ""
    mode = str(provider["mode"])
    title = f"provider mode {mode}"
    if provider.get("cassette"):
        title += f"; cassette {provider['cassette']} sha256 {provider.get('sha256')}"
    css = "badge mode" if mode in ("scripted", "replay") else "badge"
    return f'<span class="{css}" title="{esc(title)}">{esc(MODE_LABELS.get(mode, mode))}</span>'


def _fact(name: str, value_html: str) -> str:
    return f"<dt>{esc(name)}</dt><dd>{value_html}</dd>"


def _run_facts(run: Mapping[str, Any]) -> list[str]:
    facts: list[str] = []
    provider = run.get("provider")
    if isinstance(provider, Mapping):
        text = esc(MODE_LABELS.get(str(provider.get("mode")), provider.get("mode")))
        if provider.get("cassette"):
            text += f" — cassette <code>{esc(provider['cassette'])}</code>"
        facts.append(_fact("provider", text))
    model = run.get("model")
    if isinstance(model, Mapping):
        declared = model.get("declared")
        observed = model.get("observed")
        if isinstance(declared, Mapping):
            thinking = f" (thinking {declared['thinking']})" if declared.get("thinking") else ""
            facts.append(_fact("declared model", esc(f"{declared.get('model')}{thinking}")))
        if isinstance(observed, Mapping):
            facts.append(
                _fact("observed model", esc(f"{observed.get('provider')}/{observed.get('model')}"))
            )
    pi = run.get("pi")
    if isinstance(pi, Mapping):
        facts.append(_fact("pi", esc(pi.get("version"))))
    if run.get("startedAt"):
        facts.append(_fact("ran", esc(f"{run.get('startedAt')} → {run.get('completedAt')}")))
    delivery = run.get("delivery")
    if isinstance(delivery, Mapping):
        command = f" (/{delivery['command']})" if delivery.get("command") else ""
        facts.append(
            _fact(
                "delivery", esc(f"{delivery.get('kind')} on turn {delivery.get('turn')}{command}")
            )
        )
    activation = run.get("activation")
    if run.get("evaluationType") == "description" and isinstance(activation, Mapping):
        read = activation.get("targetRead")
        turns = ", ".join(str(t) for t in activation.get("readTurns") or []) or "none"
        shown = "unavailable" if read is None else ("yes" if read else "no")
        facts.append(_fact("target read", esc(f"{shown} (read turns: {turns})")))
    facts.append(_fact("tools used", esc(", ".join(tool_names(run)) or "none")))
    facts.append(_fact("usage", _usage_html(run.get("usage"))))
    process = mapping(run.get("process"))
    for key, label in (("exitCode", "exit code"), ("terminationReason", "termination")):
        if process.get(key) not in (None, 0):
            facts.append(_fact(label, esc(process[key])))
    if process.get("assistantError"):
        facts.append(_fact("assistant error", clipped(str(process["assistantError"]))))
    for key, label in (("protocolErrors", "protocol errors"), ("parseErrors", "parse errors")):
        if process.get(key):
            facts.append(_fact(label, clipped(_pretty(process[key]), "json")))
    error = run.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        facts.append(_fact(f"error ({error.get('kind')})", clipped(str(error["message"]))))
    if run.get("hint"):
        facts.append(_fact("hint", clipped(str(run["hint"]))))
    return facts


def _usage_html(usage: Any) -> str:
    if not isinstance(usage, Mapping):
        return '<span class="muted">unavailable</span>'
    cost = mapping(usage.get("cost"))
    total = cost.get("total")
    parts = [
        f"input {format_number(usage.get('input'))}",
        f"output {format_number(usage.get('output'))}",
        f"cache read {format_number(usage.get('cacheRead'))}",
        f"cache write {format_number(usage.get('cacheWrite'))}",
        f"cost ${format_number(total)}" if isinstance(total, int | float) else "cost unavailable",
    ]
    return esc(" · ".join(parts))


def _transcript(variant_dir: Path, run: Mapping[str, Any]) -> list[Any]:
    artifacts = mapping(run.get("artifacts"))
    name = artifacts.get("transcript")
    inline = run.get("transcript")
    if isinstance(inline, list):  # the persistence fallback keeps the transcript inline
        return inline
    path = variant_dir / (name if isinstance(name, str) else "transcript.json")
    if not path.is_file():
        return []
    try:
        data = read_json_file(path)
    except ViewError:
        return []
    return data if isinstance(data, list) else []


def _turn_slice(turn: Mapping[str, Any], transcript: list[Any]) -> list[Mapping[str, Any]]:
    where = turn.get("transcript")
    if not isinstance(where, Mapping):
        return []
    start, end = where.get("start"), where.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        return []
    return [m for m in transcript[start:end] if isinstance(m, Mapping)]


def _message_text(message: Mapping[str, Any], kind: str = "text") -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content if kind == "text" else ""
    parts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping) and block.get("type") == kind:
            parts.append(str(block.get(kind) or ""))
    return "\n".join(parts)


def _outcome(call: Mapping[str, Any]) -> str:
    if not call.get("completed"):
        return "incomplete"
    return "failed" if call.get("isError") else "succeeded"


def _turn_details(turn: Mapping[str, Any], transcript: list[Any]) -> list[str]:
    messages = _turn_slice(turn, transcript)
    results = {str(m.get("toolCallId")): m for m in messages if m.get("role") == "toolResult"}
    calls = [c for c in turn.get("toolActivity") or [] if isinstance(c, Mapping)]
    failed = sum(1 for c in calls if _outcome(c) != "succeeded")
    flags = ["settled" if turn.get("settled") else "unsettled"]
    if turn.get("targetRead"):
        flags.append("target read")
    flags.append(f"{len(calls)} tool call{'s' if len(calls) != 1 else ''}")
    if failed:
        flags.append(f"{failed} not succeeded")
    if turn.get("assistantError"):
        flags.append("assistant error")
    out = [
        '<details class="turn">',
        f"<summary>Turn {esc(turn.get('turn'))} — {esc(', '.join(flags))}</summary>",
        "<h5>Declared prompt</h5>",
        clipped(str(turn.get("prompt") or "")),
    ]
    delivered = turn.get("deliveredPrompt")
    if isinstance(delivered, str):
        out.append("<h5>Delivered prompt</h5>")
        out.append(clipped(delivered))
    out.append(f"<h5>Tool calls ({len(calls)})</h5>")
    if calls:
        out.append(
            '<table><colgroup><col style="width:12%"><col style="width:12%"><col><col>'
            "</colgroup><tr><th>tool</th><th>outcome</th><th>arguments</th><th>output</th></tr>"
        )
        for call in calls:
            outcome = _outcome(call)
            result = results.get(str(call.get("toolCallId")))
            output = clipped(_message_text(result)) if result is not None else _NONE
            out.append(
                f"<tr><td><code>{esc(call.get('toolName'))}</code></td>"
                f"<td>{_badge(outcome, outcome)}</td>"
                f"<td>{clipped(_pretty(call.get('args')), 'json')}</td>"
                f"<td>{output}</td></tr>"
            )
        out.append("</table>")
    out.append("<h5>Response</h5>")
    out.append(clipped(str(turn.get("response") or "")))
    if turn.get("assistantError"):
        out.append("<h5>Assistant error</h5>")
        out.append(clipped(str(turn["assistantError"])))
    wall = turn.get("wallTimeMs")
    out.append(
        f'<p class="muted">usage: {_usage_html(turn.get("usage"))}'
        + (f" · wall time {esc(wall)} ms" if isinstance(wall, int) else "")
        + "</p>"
    )
    workspace = turn.get("workspace")
    if isinstance(workspace, Mapping):
        since = workspace.get("changesSincePrevious") or {}
        summary = "; ".join(
            f"{key}: {', '.join(str(p) for p in since.get(key) or []) or 'none'}"
            for key in ("created", "modified", "deleted")
        )
        out.append(f'<p class="muted">workspace changes in this turn — {esc(summary)}</p>')
    if messages:
        out.append(f"<details><summary>transcript ({len(messages)} messages)</summary>")
        out.extend(_message_html(m) for m in messages)
        out.append("</details>")
    out.append("</details>")
    return out


def _message_html(message: Mapping[str, Any]) -> str:
    role = str(message.get("role"))
    parts = [f"<h5>{esc(role)}</h5>"]
    thinking = _message_text(message, "thinking")
    if thinking:
        parts.append(f"<details><summary>thinking</summary>{clipped(thinking)}</details>")
    text = _message_text(message)
    if text:
        parts.append(clipped(text))
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping) and block.get("type") == "toolCall":
            parts.append(
                f"<p>tool call <code>{esc(block.get('name'))}</code></p>"
                + clipped(_pretty(block.get("arguments")), "json")
            )
    if message.get("errorMessage"):
        parts.append(clipped(str(message["errorMessage"])))
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# Changed files and their diffs against the fixture snapshot


@dataclass(frozen=True, slots=True)
class _Side:
    """One side of a file diff: its text, or why there is none."""

    text: str | None
    note: str | None
    size: int | None = None


def _read_side(root: Path, rel: str) -> _Side:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return _Side(None, "not shown: the recorded path is not a plain relative path")
    path = root.joinpath(*parts)
    if path.is_symlink():
        return _Side(None, f"symlink to {os.readlink(path)}")
    if not path.exists():
        return _Side(None, "absent")
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
        return _Side(None, "not shown: the path leaves its directory")
    if path.is_dir():
        return _Side(None, "a directory")
    if not path.is_file():
        return _Side(None, "not shown: a FIFO, socket or device (never opened)")
    size = path.stat().st_size
    if size > DIFF_MAX_BYTES:
        return _Side(None, f"too large to diff ({size} bytes)", size)
    data = path.read_bytes()
    if b"\0" in data:
        return _Side(None, f"binary file ({size} bytes)", size)
    try:
        return _Side(data.decode("utf-8"), None, size)
    except UnicodeDecodeError:
        return _Side(None, f"binary file ({size} bytes)", size)


def _changed_files(group: GroupEvidence, variant: str, run: Mapping[str, Any]) -> list[str]:
    if not isinstance(run.get("effects"), Mapping):
        return []
    changes = changes_of(run)
    entries = [
        (kind, path) for kind in ("created", "modified", "deleted") for path in changes[kind]
    ]
    out = [f"<h4>Changed files ({len(entries)})</h4>"]
    if not entries:
        return [*out, '<p class="empty">(no file changed)</p>']
    fixture = group.directory / "resources" / "fixture"
    workspace = group.directory / variant / "workspace"
    for kind, rel in entries:
        before = _read_side(fixture, rel) if kind != "created" else _Side("", None, 0)
        after = _read_side(workspace, rel) if kind != "deleted" else _Side("", None, 0)
        out.extend(_file_details(kind, rel, before, after))
    return out


def _side_note(side: _Side) -> str:
    if side.text is not None:
        return f"text ({side.size} bytes)"
    return str(side.note)


def _file_details(kind: str, rel: str, before: _Side, after: _Side) -> list[str]:
    # A file name may hold TAB, CR or LF; show it the way the text view does, on one line.
    name = escape_cell(rel)
    if before.text is None or after.text is None:
        notes = []
        if kind != "created":
            notes.append(f"fixture: {_side_note(before)}")
        if kind != "deleted":
            notes.append(f"workspace: {_side_note(after)}")
        return [
            '<details class="file">',
            f"<summary>{_badge(kind)} <code>{esc(name)}</code> — no text diff</summary>",
            f'<p class="muted">{esc("; ".join(notes))}</p>',
            "</details>",
        ]
    diff = list(
        difflib.unified_diff(
            _lines(before.text),
            _lines(after.text),
            fromfile=f"fixture/{name}" if kind != "created" else "/dev/null",
            tofile=f"workspace/{name}" if kind != "deleted" else "/dev/null",
        )
    )
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    rendered = [_diff_line(line) for line in diff]
    out = [
        '<details class="file">',
        f"<summary>{_badge(kind)} <code>{esc(name)}</code> "
        f'<span class="muted">+{added} −{removed}</span></summary>',
    ]
    if not diff:
        out.append('<p class="empty">(identical text)</p>')
    elif len(rendered) <= DIFF_LINES:
        out.append(f'<pre class="diff">{"".join(rendered)}</pre>')
    else:
        out.append(f'<pre class="diff">{"".join(rendered[:DIFF_LINES])}…</pre>')
        out.append(
            f"<details><summary>show the whole diff ({len(rendered)} lines)</summary>"
            f'<pre class="diff">{"".join(rendered)}</pre></details>'
        )
    out.append("</details>")
    return out


def _diff_line(line: str) -> str:
    text = line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
    if line.startswith(("+++", "---")):
        css = "hdr"
    elif line.startswith("@@"):
        css = "hunk"
    elif line.startswith("+"):
        css = "add"
    elif line.startswith("-"):
        css = "del"
    else:
        return esc(text)
    return f'<span class="{css}">{esc(text)}</span>'


# ---------------------------------------------------------------------------------------------
# Aggregates


def _percent(value: float | None) -> str:
    return "unavailable" if value is None else f"{value * 100:.1f}%"


def _rate_html(rate: Rate) -> str:
    interval = rate.interval
    bar = ""
    if interval is not None and rate.rate is not None:
        lo, hi = (max(0.0, min(1.0, v)) for v in interval)
        bar = (
            f'<span class="bar" title="95% Wilson interval"><span class="ci" '
            f'style="left:{lo * 100:.2f}%;width:{(hi - lo) * 100:.2f}%"></span>'
            f'<span class="pt" style="left:{max(0.0, min(1.0, rate.rate)) * 100:.2f}%">'
            "</span></span> "
        )
    shown = (
        f"{_percent(rate.rate)} [{_percent(interval[0])}, {_percent(interval[1])}]"
        if interval is not None
        else _percent(rate.rate)
    )
    return f"{bar}{esc(shown)}"


def _aggregate_document(aggregate_dir: Path, links: _Links) -> str:
    data = read_json_file(aggregate_dir / "aggregate.json")
    if not isinstance(data, Mapping):
        raise ViewError(
            f"{aggregate_dir / 'aggregate.json'} is not an object; the evidence is damaged"
        )
    trials = [t for t in data.get("trials") or [] if isinstance(t, Mapping)]
    aggregate_id = data.get("id", aggregate_dir.name)
    body = [
        f"<h1>skill-eval aggregate <code>{esc(aggregate_id)}</code> "
        f"{_badge(data.get('state'), data.get('state'))}</h1>",
        '<dl class="facts">',
        f"<dt>path</dt><dd><code>{esc(aggregate_dir)}</code></dd>",
        f"<dt>trials</dt><dd>{len(trials)} of {esc(data.get('requestedTrials'))} requested</dd>",
    ]
    inputs = data.get("inputs")
    if isinstance(inputs, Mapping) and "identical" in inputs:
        same = "identical in every trial" if inputs["identical"] else "NOT identical across trials"
        body.append(f"<dt>inputs</dt><dd>{esc(same)}</dd>")
    body.append(_budget_facts(data.get("budget")))
    body.append("</dl>")
    body.append(
        '<p class="muted">Pass rates carry 95% Wilson intervals; comparisons carry an exact '
        "McNemar test on the discordant trials. These are facts about counts, not verdicts.</p>"
    )
    body.append("<h2>Trials</h2><ul>")
    for trial in trials:
        target = aggregate_dir.parent / str(trial.get("id"))
        body.append(
            f"<li>{links.anchor(str(trial.get('id')), target)} "
            f"{_badge(trial.get('state'), trial.get('state'))}</li>"
        )
    body.append("</ul>")
    for group in data.get("groups") or []:
        if isinstance(group, Mapping):
            body.extend(_aggregate_group(group))
    raw = links.anchor("aggregate.json", aggregate_dir / "aggregate.json")
    body.append(f'<p class="links">raw: {raw}</p>')
    return _document(f"skill-eval aggregate {aggregate_id}", body)


def _aggregate_group(group: Mapping[str, Any]) -> list[str]:
    out = [
        f'<section class="group" id="group-{esc(group.get("id"))}">',
        f"<h2>Group <code>{esc(group.get('id'))}</code> "
        f'<span class="muted">in {esc(group.get("trials"))} trials</span></h2>',
    ]
    comparisons = [c for c in group.get("comparisons") or [] if isinstance(c, Mapping)]
    if comparisons:
        out.append(
            "<h3>Comparisons</h3><table><tr><th>comparison</th><th>kind</th><th>baseline</th>"
            "<th>candidate</th><th>transitions</th><th>McNemar p</th><th>reading</th></tr>"
        )
        for comparison in comparisons:
            baseline, candidate, p_value, unresolved = comparison_stats(comparison)
            transitions = ", ".join(
                f"{name} {count}"
                for name, count in (comparison.get("transitions") or {}).items()
                if count
            )
            reading = "difference unresolved" if unresolved else "intervals separate, p &lt; 0.05"
            out.append(
                f"<tr><td><code>{esc(comparison.get('id'))}</code></td>"
                f"<td>{esc(comparison.get('kind'))}</td>"
                f"<td>{baseline.passes}/{baseline.total} pass<br>{_rate_html(baseline)}</td>"
                f"<td>{candidate.passes}/{candidate.total} pass<br>{_rate_html(candidate)}</td>"
                f"<td>{esc(transitions or 'none')}</td><td>{esc(format_number(p_value))}</td>"
                f"<td>{reading}</td></tr>"
            )
        out.append("</table>")
    checks = [c for c in group.get("checks") or [] if isinstance(c, Mapping)]
    out.append("<h3>Checks</h3>")
    if not checks:
        out.append('<p class="empty">(no checks)</p>')
    else:
        out.append(
            "<table><tr><th>check</th><th>variant</th><th>kind</th><th>pass</th><th>fail</th>"
            "<th>unavailable</th><th>pass rate [95% interval]</th></tr>"
        )
        for check in checks:
            rate = rate_of(check)
            out.append(
                f"<tr><td><code>{esc(check.get('id'))}</code></td>"
                f"<td>{esc(check.get('variant'))}</td><td>{esc(check.get('kind'))}</td>"
                f"<td>{esc(check.get('pass'))}</td><td>{esc(check.get('fail'))}</td>"
                f"<td>{esc(check.get('unavailable'))}</td><td>{_rate_html(rate)}</td></tr>"
            )
        out.append("</table>")
    out.append("</section>")
    return out
