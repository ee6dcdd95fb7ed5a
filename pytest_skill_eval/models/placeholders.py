"""Placeholders: fill `{{workspace}}`-style names into responses, put them back into requests."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from pytest_skill_eval.models.script import ScriptedResponse, ToolCall

_PLACEHOLDER = re.compile(r"\{\{([^{}\s]+)\}\}")
_DATE_LINE = re.compile(r"Current date: \d{4}-\d{2}-\d{2}")


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


def normalise_request(body: Mapping[str, Any], placeholders: Mapping[str, str]) -> dict[str, Any]:
    """Replace placeholder values (absolute paths) by `{{name}}` and the date line by `{{date}}`."""
    # Longest values first, so a skill path inside the workspace keeps its own name.
    pairs = sorted(
        ((name, value) for name, value in placeholders.items() if value),
        key=lambda pair: len(pair[1]),
        reverse=True,
    )
    patterns = [
        # A value only counts as a whole path: "/ws" must not rewrite "/ws2".
        (re.compile(re.escape(value) + r"(?![\w-])"), "{{" + name + "}}")
        for name, value in pairs
    ]

    def text(value: str) -> str:
        for pattern, replacement in patterns:
            value = pattern.sub(_constant(replacement), value)
        return _DATE_LINE.sub("Current date: {{date}}", value)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return {k: walk(v) for k, v in body.items()}


def _constant(replacement: str) -> Callable[[re.Match[str]], str]:
    # A function replacement keeps backslashes in names from being read as group references.
    return lambda _match: replacement


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, compact separators, UTF-8 text kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_sha256(body: Mapping[str, Any]) -> str:
    """sha256 hex digest of the canonical JSON of a (normalised) request body."""
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()
