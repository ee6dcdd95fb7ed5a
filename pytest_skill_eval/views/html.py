"""The self-contained HTML report of a result or an aggregate: no network, works from file://.

The markup lives in `templates/`; this module turns evidence into plain values for them. The
environment escapes every `{{ }}` on output (autoescape, with `_escape` as the one escaper), so no
agent or author text reaches the page unescaped, and an unknown name is an error, not an empty
string. Control characters are shown as visible symbols (a raw CR would otherwise become a line
break in HTML). Turns, files and long texts sit in `<details>` elements that start collapsed, so
large transcripts stay usable without scripts.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from .diff import changed_files
from .present import (
    Rate,
    comparison_stats,
    declared_turns,
    format_number,
    mapping,
    rate_of,
    tool_names,
)
from .text import (
    VARIANTS,
    GroupEvidence,
    ViewError,
    artifact_paths,
    is_aggregate,
    load_group,
    load_summary,
    read_json_file,
    selected_grade_state,
)

CLIP_CHARS = 3000
CLIP_LINES = 40
MODE_LABELS = {"scripted": "scripted", "replay": "replayed", "record": "recorded", "live": "live"}
TEMPLATES = Path(__file__).resolve().parent / "templates"

# Control characters (other than TAB and LF) become their visible Unicode control pictures.
_CONTROL = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}
_CONTROL[0x7F] = "\u2421"


def esc(value: Any) -> str:
    """HTML-escape any value; control characters become visible, lone surrogates `?`."""
    text = value if isinstance(value, str) else str(value)
    text = text.encode("utf-8", "replace").decode("utf-8").translate(_CONTROL)
    return html.escape(text, quote=True)


def _escape(value: Any) -> Any:
    """Every `{{ }}` result on its way out: macro output passes, anything else is escaped.

    Only the templates' own macros produce markup; every value the views pass in is data.
    """
    if isinstance(value, Markup):
        return value
    return Markup(esc(value))


@dataclass(frozen=True, slots=True)
class Clip:
    """How a text is shown: whole, or its head with the whole text nested."""

    empty: bool
    head: str | None
    chars: int
    lines: int


def clip_text(text: str) -> Clip:
    """Cut at CLIP_LINES lines or CLIP_CHARS characters; `head` is None when nothing is cut."""
    lines = text.split("\n")
    if len(text) <= CLIP_CHARS and len(lines) <= CLIP_LINES:
        return Clip(text == "", None, len(text), len(lines))
    return Clip(False, "\n".join(lines[:CLIP_LINES])[:CLIP_CHARS], len(text), len(lines))


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


ENVIRONMENT = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=StrictUndefined,
    finalize=_escape,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
ENVIRONMENT.globals.update(clip_text=clip_text, pretty=_pretty)


@dataclass(frozen=True, slots=True)
class Link:
    """A raw artifact: its label and relative href, or no href when it is not on disk."""

    label: str
    href: str | None


class _Links:
    """Relative links from the report's location to evidence inside the result directory."""

    def __init__(self, link_base: Path) -> None:
        self.link_base = link_base

    def href(self, target: Path, directory: bool = False) -> str:
        rel = os.path.relpath(target, self.link_base).replace(os.sep, "/")
        # Quoting every ':' means no path can ever read as a URL scheme.
        return quote(rel, safe="/") + ("/" if directory else "")

    def to(self, label: str, target: Path) -> Link:
        if not target.exists() and not target.is_symlink():
            return Link(label, None)
        return Link(label, self.href(target, target.is_dir()))


# ---------------------------------------------------------------------------------------------
# Documents


def render_html(result_dir: Path, *, link_base: Path | None = None) -> str:
    """One self-contained HTML document for a result or an aggregate directory.

    Links to raw artifacts are relative to `link_base`, the directory the report will be
    saved in (default: the result directory itself).
    """
    result_dir = Path(result_dir).resolve()
    links = _Links(Path(link_base).resolve() if link_base else result_dir)
    if is_aggregate(result_dir):
        return _aggregate_document(result_dir, links)
    return _result_document(result_dir, links)


def _load_invocation(result_dir: Path) -> tuple[Path, Mapping[str, Any] | None]:
    """The invocation record's path, and its content when the file exists."""
    path = result_dir / "invocation.json"
    return path, mapping(read_json_file(path)) if path.is_file() else None


def _result_document(result_dir: Path, links: _Links) -> str:
    summary = load_summary(result_dir)
    groups = [load_group(result_dir, g) for g in summary["groups"] if isinstance(g, dict)]
    result_id = summary.get("id", result_dir.name)
    invocation_path, invocation = _load_invocation(result_dir)
    definitions = [
        {"path": d.get("path"), "kind": d.get("kind"), "id": d.get("id")}
        for d in map(mapping, (invocation or {}).get("definitions") or [])
    ]
    result = {
        "id": result_id,
        "state": summary.get("state"),
        "path": result_dir,
        "trial": summary.get("trial", 1),
        "completed": summary.get("completedAt", "unknown"),
        "definitions": definitions,
        "budget": _budget(summary.get("budget")),
        "links": [
            links.to("summary.json", result_dir / "summary.json"),
            links.to("invocation.json", invocation_path),
        ],
    }
    return ENVIRONMENT.get_template("result.html.j2").render(
        title=f"skill-eval result {result_id}",
        result=result,
        groups=[_group(result_dir, group, links) for group in groups],
    )


def _budget(budget: Any) -> dict[str, str] | None:
    if not isinstance(budget, Mapping):
        return None
    return {
        "spent": format_number(budget.get("spent")),
        "max_cost": format_number(budget.get("maxCost")),
        "exhausted": " — budget exhausted" if budget.get("exhausted") else "",
    }


def _objects(value: Any) -> list[Mapping[str, Any]]:
    """The JSON objects of a list that may be absent or hold other things."""
    return [v for v in value or [] if isinstance(v, Mapping)]


# ---------------------------------------------------------------------------------------------
# One group


def _group(result_dir: Path, group: GroupEvidence, links: _Links) -> dict[str, Any]:
    record, definition, grade = group.record, group.definition, group.grade or {}
    first_run = group.runs.get("baseline") or group.runs.get("candidate")
    states = mapping(record.get("variants"))
    gdir = group.directory
    group_links = [
        links.to("definition.json", gdir / "definition.json"),
        links.to(str(group.grade_file), gdir / str(group.grade_file)),
        links.to(group.group_file, gdir / group.group_file),
        links.to("manifest.json", gdir / "manifest.json"),
    ]
    if (gdir / "resources" / "fixture").is_dir():
        group_links.append(links.to("fixture/", gdir / "resources" / "fixture"))
    if (gdir / "semantic-grade.json").is_file():
        group_links.append(links.to("semantic-grade.json", gdir / "semantic-grade.json"))
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
        "grade_errors": [
            {"id": e.get("id") or "system", "reason": str(e.get("reason"))}
            for e in _objects(grade.get("errors"))
        ],
        "group_errors": [
            {"artifact": e.get("artifact") or e.get("kind"), "message": str(e.get("message"))}
            for e in _objects(record.get("errors"))
        ],
        "comparisons": [_comparison(c) for c in grade.get("comparisons") or []],
        "review": _review(group.review),
        "variants": [_variant(result_dir, group, v, links) for v in VARIANTS],
        "links": group_links,
    }


def _comparison(comparison: Mapping[str, Any]) -> dict[str, Any]:
    sides = [mapping(comparison.get(side)) for side in VARIANTS]
    return {
        "id": comparison.get("id"),
        "kind": comparison.get("kind"),
        "sides": [{"check": s.get("check"), "state": s.get("state")} for s in sides],
        "transition": comparison.get("transition"),
    }


def _review(review: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(review, Mapping):
        return None
    answers = [
        {key: answer.get(key) for key in ("question", "baseline", "candidate", "rationale")}
        for answer in _objects(review.get("answers"))
    ]
    return {
        "state": review.get("state"),
        "model": review.get("model"),
        "answers": answers,
        "errors": list(review.get("errors") or []),
    }


# ---------------------------------------------------------------------------------------------
# One variant


def _variant(result_dir: Path, group: GroupEvidence, variant: str, links: _Links) -> dict[str, Any]:
    run = group.runs.get(variant)
    title = variant.capitalize()
    if run is None:
        return {"missing": True, "title": title}
    raw = [
        links.to(name if name != "run" else Path(path).name, result_dir / path)
        for name, path in artifact_paths(result_dir, group, variant, run)
    ]
    transcript = _transcript(group.directory / variant, run)
    return {
        "missing": False,
        "name": variant,
        "title": title,
        "state": run.get("state"),
        "mode": _mode(run),
        "facts": _run_facts(run),
        "links": raw,
        "turns": [_turn(turn, transcript) for turn in _objects(run.get("turns"))],
        "changes": changed_files(group.directory, variant, run),
    }


def _mode(run: Mapping[str, Any]) -> dict[str, str] | None:
    provider = run.get("provider")
    if not isinstance(provider, Mapping) or not provider.get("mode"):
        return None
    mode = str(provider["mode"])
    title = f"provider mode {mode}"
    if provider.get("cassette"):
        title += f"; cassette {provider['cassette']} sha256 {provider.get('sha256')}"
    css = "badge mode" if mode in ("scripted", "replay") else "badge"
    return {"css": css, "title": title, "label": MODE_LABELS.get(mode, mode)}


def _fact(name: str, value: Any, form: str = "text", cassette: Any = None) -> dict[str, Any]:
    """One fact row; `form` says how the template shows `value` (text, clip, json, usage...)."""
    return {"name": name, "value": value, "form": form, "cassette": cassette}


def _run_facts(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    facts: list[dict[str, Any]] = []
    provider = run.get("provider")
    if isinstance(provider, Mapping):
        label = MODE_LABELS.get(str(provider.get("mode")), provider.get("mode"))
        facts.append(_fact("provider", label, "provider", provider.get("cassette") or None))
    model = run.get("model")
    if isinstance(model, Mapping):
        declared = model.get("declared")
        observed = model.get("observed")
        if isinstance(declared, Mapping):
            thinking = f" (thinking {declared['thinking']})" if declared.get("thinking") else ""
            facts.append(_fact("declared model", f"{declared.get('model')}{thinking}"))
        if isinstance(observed, Mapping):
            shown = f"{observed.get('provider')}/{observed.get('model')}"
            facts.append(_fact("observed model", shown))
    pi = run.get("pi")
    if isinstance(pi, Mapping):
        facts.append(_fact("pi", pi.get("version")))
    if run.get("startedAt"):
        facts.append(_fact("ran", f"{run.get('startedAt')} → {run.get('completedAt')}"))
    delivery = run.get("delivery")
    if isinstance(delivery, Mapping):
        command = f" (/{delivery['command']})" if delivery.get("command") else ""
        shown = f"{delivery.get('kind')} on turn {delivery.get('turn')}{command}"
        facts.append(_fact("delivery", shown))
    activation = run.get("activation")
    if run.get("evaluationType") == "description" and isinstance(activation, Mapping):
        read = activation.get("targetRead")
        turns = ", ".join(str(t) for t in activation.get("readTurns") or []) or "none"
        shown = "unavailable" if read is None else ("yes" if read else "no")
        facts.append(_fact("target read", f"{shown} (read turns: {turns})"))
    facts.append(_fact("tools used", ", ".join(tool_names(run)) or "none"))
    facts.append(_fact("usage", _usage_text(run.get("usage")), "usage"))
    process = mapping(run.get("process"))
    for key, label in (("exitCode", "exit code"), ("terminationReason", "termination")):
        if process.get(key) not in (None, 0):
            facts.append(_fact(label, process[key]))
    if process.get("assistantError"):
        facts.append(_fact("assistant error", str(process["assistantError"]), "clip"))
    for key, label in (("protocolErrors", "protocol errors"), ("parseErrors", "parse errors")):
        if process.get(key):
            facts.append(_fact(label, process[key], "json"))
    error = run.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        facts.append(_fact(f"error ({error.get('kind')})", str(error["message"]), "clip"))
    if run.get("hint"):
        facts.append(_fact("hint", str(run["hint"]), "clip"))
    return facts


def _usage_text(usage: Any) -> str | None:
    """The usage line, or None when the run records no usage."""
    if not isinstance(usage, Mapping):
        return None
    total = mapping(usage.get("cost")).get("total")
    parts = [
        f"input {format_number(usage.get('input'))}",
        f"output {format_number(usage.get('output'))}",
        f"cache read {format_number(usage.get('cacheRead'))}",
        f"cache write {format_number(usage.get('cacheWrite'))}",
        f"cost ${format_number(total)}" if isinstance(total, int | float) else "cost unavailable",
    ]
    return " · ".join(parts)


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


# ---------------------------------------------------------------------------------------------
# One turn


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


def _turn(turn: Mapping[str, Any], transcript: list[Any]) -> dict[str, Any]:
    messages = _turn_slice(turn, transcript)
    results = {str(m.get("toolCallId")): m for m in messages if m.get("role") == "toolResult"}
    calls = _objects(turn.get("toolActivity"))
    failed = sum(1 for c in calls if _outcome(c) != "succeeded")
    flags = ["settled" if turn.get("settled") else "unsettled"]
    if turn.get("targetRead"):
        flags.append("target read")
    flags.append(f"{len(calls)} tool call{'s' if len(calls) != 1 else ''}")
    if failed:
        flags.append(f"{failed} not succeeded")
    if turn.get("assistantError"):
        flags.append("assistant error")
    delivered = turn.get("deliveredPrompt")
    wall = turn.get("wallTimeMs")
    workspace = turn.get("workspace")
    changes = None
    if isinstance(workspace, Mapping):
        since = workspace.get("changesSincePrevious") or {}
        changes = "; ".join(
            f"{key}: {', '.join(str(p) for p in since.get(key) or []) or 'none'}"
            for key in ("created", "modified", "deleted")
        )
    return {
        "number": turn.get("turn"),
        "flags": ", ".join(flags),
        "prompt": str(turn.get("prompt") or ""),
        "delivered": delivered if isinstance(delivered, str) else None,
        "calls": [_call(call, results) for call in calls],
        "response": str(turn.get("response") or ""),
        "assistant_error": str(turn["assistantError"]) if turn.get("assistantError") else None,
        "usage": _usage_text(turn.get("usage")),
        "wall": wall if isinstance(wall, int) else None,
        "workspace": changes,
        "messages": [_message(m) for m in messages],
    }


def _call(call: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    result = results.get(str(call.get("toolCallId")))
    return {
        "tool": call.get("toolName"),
        "outcome": _outcome(call),
        "args": call.get("args"),
        "output": _message_text(result) if result is not None else None,
    }


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    calls = [
        {"name": block.get("name"), "arguments": block.get("arguments")}
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, Mapping) and block.get("type") == "toolCall"
    ]
    return {
        "role": str(message.get("role")),
        "thinking": _message_text(message, "thinking"),
        "text": _message_text(message),
        "calls": calls,
        "error": str(message["errorMessage"]) if message.get("errorMessage") else "",
    }


# ---------------------------------------------------------------------------------------------
# Aggregates


def _percent(value: float | None) -> str:
    return "unavailable" if value is None else f"{value * 100:.1f}%"


def _rate(rate: Rate) -> dict[str, Any]:
    """A rate as shown: the interval bar's positions (percent of its width) and the numbers."""
    interval = rate.interval
    bar = None
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
    """`aggregate.json` of an aggregate directory; not an object means damaged evidence."""
    data = read_json_file(aggregate_dir / "aggregate.json")
    if not isinstance(data, Mapping):
        raise ViewError(
            f"{aggregate_dir / 'aggregate.json'} is not an object; the evidence is damaged"
        )
    return data


def _aggregate_document(aggregate_dir: Path, links: _Links) -> str:
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
        for trial in _objects(data.get("trials"))
    ]
    aggregate = {
        "id": aggregate_id,
        "state": data.get("state"),
        "path": aggregate_dir,
        "trials": trials,
        "requested": data.get("requestedTrials"),
        "inputs": same,
        "budget": _budget(data.get("budget")),
        "groups": [_aggregate_group(g) for g in _objects(data.get("groups"))],
        "links": [links.to("aggregate.json", aggregate_dir / "aggregate.json")],
    }
    return ENVIRONMENT.get_template("aggregate.html.j2").render(
        title=f"skill-eval aggregate {aggregate_id}", aggregate=aggregate
    )


def _aggregate_group(group: Mapping[str, Any]) -> dict[str, Any]:
    comparisons = []
    for comparison in _objects(group.get("comparisons")):
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
            }
        )
    checks = [
        {
            "id": check.get("id"),
            "variant": check.get("variant"),
            "kind": check.get("kind"),
            "passed": check.get("pass"),
            "failed": check.get("fail"),
            "unavailable": check.get("unavailable"),
            "rate": _rate(rate_of(check)),
        }
        for check in _objects(group.get("checks"))
    ]
    return {
        "id": group.get("id"),
        "trials": group.get("trials"),
        "comparisons": comparisons,
        "checks": checks,
    }
