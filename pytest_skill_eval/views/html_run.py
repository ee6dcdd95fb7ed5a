"""One variant's run as the report shows it: facts, raw links, turns, tool calls, messages.

Plain values for `variant.html.j2` and `turn.html.j2`; the templates escape all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..common.wording import counted
from ..evidence import layout
from .diff import changed_files
from .html_parts import (
    Badge,
    Call,
    Fact,
    Message,
    MessageCall,
    MissingVariant,
    TurnView,
    VariantView,
)
from .markup import Links, objects
from .offered import offered_skills, offered_text, variant_notes
from .places import project_root, shown_path
from .present import cost_label, format_number, mapping, run_spend, tool_names, tool_outcome
from .text import GroupEvidence, ViewError, artifact_paths, read_json_file

MODE_LABELS = {"scripted": "scripted", "replay": "replayed", "record": "recorded", "live": "live"}


def variant_view(
    result_dir: Path, group: GroupEvidence, variant: str, links: Links
) -> VariantView | MissingVariant:
    run = group.runs.get(variant)
    title = variant.capitalize()
    if run is None:
        return {"missing": True, "title": title, "file": layout.RUN}
    raw = [
        links.to(name if name != "run" else Path(path).name, result_dir / path)
        for name, path in artifact_paths(result_dir, group, variant, run)
    ]
    transcript = _transcript(group.directory / variant, run)
    root = project_root(result_dir)
    return {
        "missing": False,
        "name": variant,
        "title": title,
        "state": run.get("state"),
        "mode": _mode(run, root),
        "facts": _run_facts(run, root) + _activation_facts(group.directory / variant, run),
        "offered": [
            {
                "name": skill.get("name"),
                "state": offered_text(skill),
                "sent": skill.get("description"),
            }
            for skill in offered_skills(group.directory / variant)
        ],
        "links": raw,
        "turns": [_turn(turn, transcript, _simulated(run)) for turn in objects(run.get("turns"))],
        "changes": changed_files(group.directory, variant, run),
    }


def _mode(run: Mapping[str, Any], root: Path | None) -> Badge | None:
    provider = run.get("provider")
    if not isinstance(provider, Mapping) or not provider.get("mode"):
        return None
    mode = str(provider["mode"])
    title = f"provider mode {mode}"
    if provider.get("cassette"):
        cassette = shown_path(provider["cassette"], root)
        title += f"; cassette {cassette} sha256 {provider.get('sha256')}"
    css = "badge mode" if mode in ("scripted", "replay") else "badge"
    return {"css": css, "title": title, "label": MODE_LABELS.get(mode, mode)}


def _fact(name: str, value: object, form: str = "text", cassette: object = None) -> Fact:
    """One fact row; `form` says how the template shows `value` (text, clip, json, usage...)."""
    return {"name": name, "value": value, "form": form, "cassette": cassette}


def _run_facts(run: Mapping[str, Any], root: Path | None) -> list[Fact]:
    facts: list[Fact] = []
    provider = run.get("provider")
    if isinstance(provider, Mapping):
        label = MODE_LABELS.get(str(provider.get("mode")), provider.get("mode"))
        cassette = provider.get("cassette")
        shown = shown_path(cassette, root) if cassette else None
        facts.append(_fact("provider", label, "provider", shown))
    reused = run.get("reused")  # copied from an earlier sealed result, not run in this one
    if isinstance(reused, Mapping):
        facts.append(_fact("reused from", f"{reused.get('result')} seal {reused.get('root')}"))
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
    binary = run.get("binary", run.get("pi"))  # results before `binary` kept only Pi's
    if isinstance(binary, Mapping):
        host = mapping(run.get("process")).get("host") or layout.DEFAULT_HOST
        facts.append(_fact(str(host), binary.get("version")))
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
    spend = run_spend(run)
    usd = spend[0] if spend is not None else None
    facts.append(_fact("usage", _usage_text(run.get("usage"), _simulated(run), usd), "usage"))
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


def _activation_facts(variant_dir: Path, run: Mapping[str, Any]) -> list[Fact]:
    """The activation state of a description run, and what a reader must know of it."""
    state = mapping(run.get("activation")).get("state")
    if run.get("evaluationType") != "description" or state is None:
        return []
    notes = variant_notes(variant_dir, run)
    return [_fact("activation", str(state).replace("-", " ")), *(_fact("note", n) for n in notes)]


def _simulated(run: Mapping[str, Any]) -> bool:
    spend = run_spend(run)
    return spend is not None and spend[1]


def _usage_text(usage: Any, simulated: bool, usd: float | None = None) -> str | None:
    """The usage line, or None when the run records no usage; simulated cost says so.

    `usd` (the run's spend) replaces the priced usage: a recording pays only what went upstream.
    """
    if not isinstance(usage, Mapping):
        return None
    total = usd if usd is not None else mapping(usage.get("cost")).get("total")
    parts = [
        f"input {format_number(usage.get('input'))}",
        f"output {format_number(usage.get('output'))}",
        f"cache read {format_number(usage.get('cacheRead'))}",
        f"cache write {format_number(usage.get('cacheWrite'))}",
        f"cost {cost_label(total, simulated)}"
        if isinstance(total, int | float)
        else "cost unavailable",
    ]
    return " · ".join(parts)


def _transcript(variant_dir: Path, run: Mapping[str, Any]) -> list[Any]:
    artifacts = mapping(run.get("artifacts"))
    name = artifacts.get("transcript")
    inline = run.get("transcript")
    if isinstance(inline, list):  # the persistence fallback keeps the transcript inline
        return inline
    # Only a name inside the variant directory: a damaged record must not point elsewhere.
    if not isinstance(name, str) or not layout.is_safe_id(name):
        name = layout.TRANSCRIPT
    try:
        data = read_json_file(variant_dir / name)
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


def _turn(turn: Mapping[str, Any], transcript: list[Any], simulated: bool) -> TurnView:
    messages = _turn_slice(turn, transcript)
    results = {str(m.get("toolCallId")): m for m in messages if m.get("role") == "toolResult"}
    calls = objects(turn.get("toolActivity"))
    failed = sum(1 for c in calls if tool_outcome(c) != "succeeded")
    flags = ["settled" if turn.get("settled") else "unsettled"]
    if turn.get("targetRead"):
        flags.append("target read")
    flags.append(counted(len(calls), "tool call"))
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
        "usage": _usage_text(turn.get("usage"), simulated),
        "wall": wall if isinstance(wall, int) else None,
        "workspace": changes,
        "messages": [_message(m) for m in messages],
    }


def _call(call: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]]) -> Call:
    result = results.get(str(call.get("toolCallId")))
    return {
        "tool": call.get("toolName"),
        "outcome": tool_outcome(call),
        "args": call.get("args"),
        "output": _message_text(result) if result is not None else None,
    }


def _message(message: Mapping[str, Any]) -> Message:
    content = message.get("content")
    calls: list[MessageCall] = [
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
