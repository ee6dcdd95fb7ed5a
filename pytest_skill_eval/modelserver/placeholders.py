"""Placeholders: fill `{{workspace}}`-style names into responses, put them back into requests."""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall

from ..common.wording import counted

_PLACEHOLDER = re.compile(r"\{\{([^{}\s]+)\}\}")
_DATE_LINE = re.compile(r"Current date: \d{4}-\d{2}-\d{2}")
# Codex's per-run values in the text of a Responses request: the environment context of each
# turn, and the timing and session numbers its shell reports in tool outputs.
_RESPONSES_TEXT = (
    (re.compile(r"<current_date>[^<]*</current_date>"), "<current_date>{{date}}</current_date>"),
    (re.compile(r"<timezone>[^<]*</timezone>"), "<timezone>{{timezone}}</timezone>"),
    (re.compile(r"<cwd>[^<]*</cwd>"), "<cwd>{{cwd}}</cwd>"),
)
_TOOL_OUTPUT_TEXT = (
    (re.compile(r"Chunk ID: \w+"), "Chunk ID: {{chunk_id}}"),
    (re.compile(r"Wall time: [\d.]+ seconds"), "Wall time: {{wall_time}} seconds"),
    (re.compile(r"session ID \d+"), "session ID {{session_id}}"),
    (re.compile(r'"duration_seconds": ?[\d.]+'), '"duration_seconds":"{{wall_time}}"'),
)
_TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_GEMINI_CALLS = ("functionCall", "functionResponse")
# What a host writes anew into each run's requests (a date, its device and session ids) is
# declared by the host (`HostRegistration.request_stamps`: a pattern and what stands for it) and
# handed to its route. Every host's isolated home its skills are listed under (made by
# `launch.isolated_home` for each run, named as `tempfile.mkdtemp` names) is one more.
Stamps = Sequence[tuple[str, str]]
_HOST_VALUES = (
    # Anchored at a word's start: unanchored, a long word without the home in it (a file's
    # content in a tool call) was scanned from each of its characters, holding the GIL for
    # hours on a few megabytes, so that not even the no-progress watchdog could run.
    (re.compile(r"(?<![^\s\"'`])[^\s\"'`]*/skill-eval-[a-z-]+-[a-z0-9_]{8}(?=/)"), "{{host_home}}"),
)


def fill_text(text: str, placeholders: Mapping[str, str]) -> str:
    """Replace each known `{{name}}` with its value; unknown names stay as written."""
    if "{{" not in text:
        return text
    return _PLACEHOLDER.sub(lambda m: placeholders.get(m.group(1), m.group(0)), text)


def fill_value(value: Any, placeholders: Mapping[str, str]) -> Any:
    """Fill placeholders in every string of a JSON-like value, recursively."""
    if isinstance(value, str):
        return fill_text(value, placeholders)
    if isinstance(value, list):
        return [fill_value(v, placeholders) for v in value]
    if isinstance(value, dict):
        return {k: fill_value(v, placeholders) for k, v in value.items()}
    return value


def fill_response(response: ScriptedResponse, placeholders: Mapping[str, str]) -> ScriptedResponse:
    """Return `response` with placeholders filled in text, thinking, tool calls and error."""
    if not placeholders:
        return response
    calls = tuple(
        ToolCall(
            name=fill_text(call.name, placeholders),
            arguments=fill_value(dict(call.arguments), placeholders),
            id=None if call.id is None else fill_text(call.id, placeholders),
        )
        for call in response.tool_calls
    )
    error = response.error
    if error is not None:
        error = dataclasses.replace(error, message=fill_text(error.message, placeholders))
    return dataclasses.replace(
        response,
        text=None if response.text is None else fill_text(response.text, placeholders),
        thinking=None if response.thinking is None else fill_text(response.thinking, placeholders),
        tool_calls=calls,
        error=error,
    )


def normaliser(placeholders: Mapping[str, str], stamps: Stamps = ()) -> Callable[[str], str]:
    """A function putting `{{name}}` back for placeholder values, `{{date}}` in the date line and
    the host's `stamps` (pattern, replacement) back to their placeholders."""
    # Longest values first, so a skill path inside the workspace keeps its own name.
    pairs = sorted(
        ((name, value) for name, value in placeholders.items() if value),
        key=lambda pair: len(pair[1]),
        reverse=True,
    )
    declared = [(re.compile(pattern), replacement) for pattern, replacement in stamps]
    patterns = [
        # A value only counts as a whole path: "/ws" must not rewrite "/ws2".
        (re.compile(re.escape(value) + r"(?![\w-])"), "{{" + name + "}}")
        for name, value in pairs
    ]

    def text(value: str) -> str:
        for pattern, replacement in patterns:
            value = pattern.sub(_constant(replacement), value)
        for pattern, replacement in (*declared, *_HOST_VALUES):
            value = pattern.sub(_constant(replacement), value)
        return _DATE_LINE.sub("Current date: {{date}}", value)

    return text


def normalise_value(value: Any, placeholders: Mapping[str, str]) -> Any:
    """Normalise every string of a JSON-like value (see `normaliser`), recursively."""
    return _walk(value, normaliser(placeholders), signatures=False)


def normalise_request(
    body: Mapping[str, Any], placeholders: Mapping[str, str], stamps: Stamps = ()
) -> dict[str, Any]:
    """Replace placeholder values (absolute paths) by `{{name}}` and the date line by `{{date}}`.

    Anthropic thinking-block signatures become `{{signature}}`: they are opaque per answer, so a
    replayed answer (which cannot carry the provider's signature) must hash like the recording;
    the ids Gemini CLI gives its calls (`functionCall`/`functionResponse` `id`) `{{call_id}}`.
    A Responses request (it has `input` items) also loses its per-run values; see
    `normalise_responses`. `stamps` are the serving host's own per-run values.
    """
    text = normaliser(placeholders, stamps)
    normal = {k: _walk(v, text, signatures=True) for k, v in body.items()}
    if isinstance(normal.get("input"), list) and "messages" not in normal:
        normal = normalise_responses(normal)
    return normal


def normalise_responses(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses request with Codex's per-run values replaced by placeholders.

    The thread id (`prompt_cache_key`), every `client_metadata` value (session, thread, turn and
    window ids, installation id, turn start time), every input item's `id`, the date, timezone
    and cwd of `<environment_context>`, and the chunk ids, wall times and session numbers of
    tool outputs. Reasoning items are left out whole: their ids and encrypted content are opaque
    per answer, and a replayed answer cannot carry what the provider encrypted. Headers are not
    part of the hash.
    """
    normal = dict(body)
    if isinstance(normal.get("prompt_cache_key"), str):
        normal["prompt_cache_key"] = "{{prompt_cache_key}}"
    metadata = normal.get("client_metadata")
    if isinstance(metadata, dict):
        normal["client_metadata"] = dict.fromkeys(metadata, "{{client_metadata}}")
    items = []
    for item in normal["input"]:
        if not isinstance(item, dict):
            items.append(item)
            continue
        if item.get("type") == "reasoning":
            continue
        item = dict(item)
        if isinstance(item.get("id"), str):
            item["id"] = "{{item_id}}"
        if item.get("type") == "function_call" and isinstance(item.get("arguments"), str):
            # Codex echoes the arguments as the provider spelled them; a replayed answer is
            # rendered compactly, so only their JSON value counts.
            item["arguments"] = _canonical_json(item["arguments"])
        rules = _TOOL_OUTPUT_TEXT if item.get("type") in _TOOL_OUTPUTS else _RESPONSES_TEXT
        items.append(_walk(item, _substitute(rules), signatures=False))
    normal["input"] = items
    return normal


def _canonical_json(text: str) -> str:
    """`text` as compact JSON with sorted keys, or unchanged when it is not JSON."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _substitute(rules: tuple[tuple[re.Pattern[str], str], ...]) -> Callable[[str], str]:
    def text(value: str) -> str:
        for pattern, replacement in rules:
            value = pattern.sub(_constant(replacement), value)
        return value

    return text


def normalise_response(
    response: ScriptedResponse, placeholders: Mapping[str, str]
) -> ScriptedResponse:
    """The inverse of `fill_response`: paths and the date line back to placeholders."""
    text = normaliser(placeholders)
    calls = tuple(
        dataclasses.replace(call, arguments=_walk(dict(call.arguments), text, signatures=False))
        for call in response.tool_calls
    )
    error = response.error
    if error is not None:
        error = dataclasses.replace(error, message=text(error.message))
    return dataclasses.replace(
        response,
        text=None if response.text is None else text(response.text),
        thinking=None if response.thinking is None else text(response.thinking),
        tool_calls=calls,
        error=error,
    )


def _walk(value: Any, text: Callable[[str], str], *, signatures: bool) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, list):
        return [_walk(v, text, signatures=signatures) for v in value]
    if isinstance(value, dict):
        walked = {k: _walk(v, text, signatures=signatures) for k, v in value.items()}
        if signatures and walked.get("type") == "thinking" and "signature" in walked:
            walked["signature"] = "{{signature}}"
        for key in _GEMINI_CALLS if signatures else ():
            # Gemini CLI names each call `<tool>_<milliseconds>_<n>` itself.
            call = walked.get(key)
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                walked[key] = {**call, "id": "{{call_id}}"}
        return walked
    return value


def request_diff(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    *,
    expected_label: str,
    actual_label: str,
    limit: int = 40,
) -> str:
    """A short unified diff (at most `limit` lines) of two normalised request bodies."""
    lines = [
        _clip(line)
        for line in difflib.unified_diff(
            _diff_lines(expected),
            _diff_lines(actual),
            expected_label,
            actual_label,
            n=1,
            lineterm="",
        )
    ]
    if len(lines) > limit:
        hidden = len(lines) - (limit - 1)
        lines = [*lines[: limit - 1], f"... {counted(hidden, 'more diff line')}"]
    return "\n".join(lines)


def _diff_lines(body: Mapping[str, Any]) -> list[str]:
    # Multi-line strings (system prompts, tool results) become lists so a diff shows the line.
    def split(value: Any) -> Any:
        if isinstance(value, str) and "\n" in value:
            return value.split("\n")
        if isinstance(value, list):
            return [split(v) for v in value]
        if isinstance(value, dict):
            return {k: split(v) for k, v in value.items()}
        return value

    return json.dumps(split(dict(body)), indent=1, sort_keys=True, ensure_ascii=False).splitlines()


def _clip(line: str, width: int = 160) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


def _constant(replacement: str) -> Callable[[re.Match[str]], str]:
    # A function replacement keeps backslashes in names from being read as group references.
    return lambda _match: replacement


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, compact separators, UTF-8 text kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_sha256(body: Mapping[str, Any]) -> str:
    """sha256 hex digest of the canonical JSON of a (normalised) request body."""
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()
