"""Cassettes as data and YAML text: what recording writes and what `once` mode reads back."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from pytest_skill_eval.evidence.store import atomic_write
from pytest_skill_eval.modelserver.script import (
    REQUEST_TEXT_KEYS,
    Interaction,
    RequestNote,
    Script,
    ScriptedResponse,
    ScriptError,
    TokenCount,
    ToolCall,
)
from pytest_skill_eval.modelserver.scriptparse import load_script, parse_script
from pytest_skill_eval.modelserver.upstream import RecordError


def script_data(script: Script) -> dict[str, Any]:
    """The YAML-ready data of a script; `parse_script` of it gives an equal script back."""
    return cassette_data(script.match, script.interactions, script.token_counts)


def cassette_data(
    match: str, interactions: Sequence[Interaction], counts: Sequence[TokenCount] = ()
) -> dict[str, Any]:
    """The YAML-ready data of a cassette; `token_counts` only when there are some."""
    data: dict[str, Any] = {
        "version": 1,
        "match": match,
        "interactions": [interaction_data(item) for item in interactions],
    }
    if counts:
        data["token_counts"] = [count_data(count) for count in counts]
    return data


def interaction_data(interaction: Interaction) -> dict[str, Any]:
    """The YAML-ready data of one interaction (request part only when present)."""
    data: dict[str, Any] = {}
    if interaction.request is not None:
        data["request"] = _request_data(interaction.request)
    data["response"] = response_data(interaction.response)
    return data


def count_data(count: TokenCount) -> dict[str, Any]:
    """The YAML-ready data of one recorded token count (request part only when present)."""
    data: dict[str, Any] = {}
    if count.request is not None:
        data["request"] = _request_data(count.request)
    data["input_tokens"] = count.input_tokens
    return data


def _request_data(note: RequestNote) -> dict[str, Any]:
    request: dict[str, Any] = {
        key: getattr(note, key) for key in REQUEST_TEXT_KEYS if getattr(note, key) is not None
    }
    if note.body is not None:
        request["body"] = dict(note.body)
    return request


def response_data(response: ScriptedResponse) -> dict[str, Any]:
    """The YAML-ready data of a neutral response; usage and stop are always explicit."""
    data: dict[str, Any] = {}
    if response.error is not None:
        data["error"] = {"status": response.error.status, "message": response.error.message}
    else:
        if response.text is not None:
            data["text"] = response.text
        if response.thinking is not None:
            data["thinking"] = response.thinking
        if response.tool_calls:
            data["tool_calls"] = [_tool_call_data(call) for call in response.tool_calls]
        usage = response.usage
        data["usage"] = {
            "input": usage.input,
            "output": usage.output,
            "cache_read": usage.cache_read,
            "cache_write": usage.cache_write,
        }
        data["stop"] = response.stop
    if response.latency_ms:
        data["latency_ms"] = response.latency_ms
    return data


def _tool_call_data(call: ToolCall) -> dict[str, Any]:
    data: dict[str, Any] = {"name": call.name, "arguments": dict(call.arguments)}
    if call.id is not None:
        data["id"] = call.id
    return data


_UNICODE_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings, so recorded prompts stay readable."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style: str | None = None
    if any(ch in value for ch in _UNICODE_BREAKS):
        # PyYAML writes these breaks raw in plain and single-quoted scalars, and folds them into
        # spaces when reading back; double quotes escape them.
        style = '"'
    elif "\n" in value:
        style = "|"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def cassette_text(data: Mapping[str, Any]) -> str:
    """YAML text of cassette data; multi-line strings in block style, key order kept."""
    return yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True)


def load_existing(path: Path) -> Script | None:
    """The cassette at `path` for `once` mode, or None when there is none yet."""
    return load_script(path) if path.is_file() else None


def write_cassette(path: Path, data: Mapping[str, Any], redact: Callable[[str], str]) -> str:
    """Write the recorded cassette `data` to `path` atomically; return the file's sha256.

    `redact` cleans the text once more after the values were. Raises `RecordError` for a
    cassette that would not load back as the same data (never written) or cannot be written.
    """
    text = redact(cassette_text(data))
    try:
        loaded = yaml.safe_load(text)
        parse_script(loaded, source=path)
    except (ScriptError, yaml.YAMLError) as error:  # never write what cannot be replayed
        raise RecordError(f"{path}: the recorded cassette does not load back ({error})") from error
    if loaded != data:
        raise RecordError(f"{path}: the recorded cassette does not load back")
    raw = text.encode("utf-8")
    try:
        atomic_write(path, raw)
    except OSError as error:
        raise RecordError(
            f"{path}: the cassette cannot be written ({error.strerror}); "
            "check that its directory is writable"
        ) from error
    return hashlib.sha256(raw).hexdigest()
