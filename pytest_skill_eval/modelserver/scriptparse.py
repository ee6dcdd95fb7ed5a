"""Reading a script file: YAML, validation of every key, and errors naming file and line."""

from __future__ import annotations

import copy
import difflib
import hashlib
from pathlib import Path
from typing import Any, cast

import yaml

from pytest_skill_eval.modelserver.script import (
    MATCH_MODES,
    REQUEST_TEXT_KEYS,
    STOP_REASONS,
    SUPPORTED_APIS,
    ErrorReply,
    Interaction,
    MatchMode,
    RequestNote,
    Script,
    ScriptedResponse,
    ScriptError,
    StopReason,
    TokenCount,
    ToolCall,
    Usage,
)

from .scriptlines import line_of

_TOP_KEYS = ("version", "match", "interactions", "token_counts")
_INTERACTION_KEYS = ("request", "response")
_REQUEST_KEYS = ("api", "model", "sha256", "excerpt", "body")
_COUNT_KEYS = ("request", "input_tokens")
_RESPONSE_KEYS = ("text", "thinking", "tool_calls", "usage", "stop", "error", "latency_ms")
_TOOL_CALL_KEYS = ("name", "arguments", "id")
_USAGE_KEYS = ("input", "output", "cache_read", "cache_write")
_ERROR_KEYS = ("status", "message")

# libyaml's loader where PyYAML was built with it: it builds the same objects about seven times
# faster. A document it refuses is read again by the pure loader, whose messages are the ones shown.
_FAST_LOADER: type[yaml.SafeLoader] | None = getattr(yaml, "CSafeLoader", None)


class _Parsed:
    """Scripts already validated in this process, by (path, SHA-256 of the bytes): collection
    checks every script and each run reads its own again. Keyed on the bytes, a changed file is
    read anew; the oldest are dropped once the files kept add up to more than `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept: dict[tuple[Path, str], tuple[Script, int]] = {}
        self.size = 0

    def get(self, key: tuple[Path, str]) -> Script | None:
        found = self.kept.get(key)
        return None if found is None else found[0]

    def keep(self, key: tuple[Path, str], script: Script, size: int) -> None:
        if size > self.limit:
            return
        self.kept[key] = (script, size)
        self.size += size
        while self.size > self.limit:
            self.size -= self.kept.pop(next(iter(self.kept)))[1]


_PARSED = _Parsed(32 * 1024 * 1024)


def load_script(path: Path) -> Script:
    """Read and validate a script YAML file; raise `ScriptError` naming the file and location.

    Each caller gets its own copy: the tool-call arguments and request bodies are plain
    mappings, so a run that changed its copy must not change what another run is given.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ScriptError(path, "", f"cannot be read ({exc.strerror}); check the path") from exc
    key = (path, hashlib.sha256(raw).hexdigest())
    script = _PARSED.get(key)
    if script is None:
        script = _load_bytes(path, raw, key[1])
        _PARSED.keep(key, script, len(raw))
    return copy.deepcopy(script)


def _safe_load(text: str) -> Any:
    if _FAST_LOADER is not None:
        try:
            return yaml.load(text, Loader=_FAST_LOADER)
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)


def _load_bytes(path: Path, raw: bytes, sha256: str) -> Script:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScriptError(
            path, f"byte {exc.start}", "is not UTF-8; save the file as UTF-8"
        ) from exc
    try:
        data = _safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        location = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScriptError(path, location, f"is not valid YAML ({problem}); fix the syntax") from exc
    try:
        return parse_script(data, source=path, sha256=sha256)
    except ScriptError as error:
        line = line_of(text, error.location)
        if line is None:
            raise
        raise ScriptError(path, f"line {line} ({error.location})", error.problem) from None


def parse_script(data: object, *, source: Path | None = None, sha256: str | None = None) -> Script:
    """Validate already-parsed script data (a mapping as YAML would give it)."""
    _check_encodable(data, source, "")
    top = _mapping(data, source, "(top level)", _TOP_KEYS)
    version = top.get("version")
    if version is None:
        raise ScriptError(source, "version", "is missing; add `version: 1`")
    if not _is_int(version) or version != 1:
        raise ScriptError(source, "version", f"must be 1, got {version!r}")
    match = top.get("match", "order")
    if match not in MATCH_MODES:
        raise ScriptError(source, "match", f"must be one of order, body; got {match!r}")
    items = top.get("interactions")
    if not isinstance(items, list) or not items:
        raise ScriptError(
            source, "interactions", "must be a non-empty list of {response: ...} entries"
        )
    interactions = tuple(
        _interaction(item, source, f"interactions[{i}]", cast(MatchMode, match))
        for i, item in enumerate(items)
    )
    counts = top.get("token_counts") or []
    if not isinstance(counts, list):
        raise ScriptError(source, "token_counts", f"must be a list, got {_kind(counts)}")
    return Script(
        interactions=interactions,
        match=cast(MatchMode, match),
        version=1,
        source=source,
        sha256=sha256,
        token_counts=tuple(
            _token_count(item, source, f"token_counts[{i}]") for i, item in enumerate(counts)
        ),
    )


def _token_count(value: object, source: Path | None, where: str) -> TokenCount:
    item = _mapping(value, source, where, _COUNT_KEYS)
    tokens = item.get("input_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        raise ScriptError(
            source, f"{where}.input_tokens", f"must be a non-negative integer, got {tokens!r}"
        )
    request = None
    if item.get("request") is not None:
        request = _request(item["request"], source, f"{where}.request")
    return TokenCount(input_tokens=int(tokens), request=request)


def _interaction(value: object, source: Path | None, where: str, match: MatchMode) -> Interaction:
    item = _mapping(value, source, where, _INTERACTION_KEYS)
    if "response" not in item:
        raise ScriptError(source, f"{where}.response", "is missing; every interaction needs one")
    request = None
    if item.get("request") is not None:
        request = _request(item["request"], source, f"{where}.request")
    if match == "body" and (request is None or request.sha256 is None):
        raise ScriptError(
            source,
            f"{where}.request.sha256",
            "is required with `match: body`; record the cassette or use `match: order`",
        )
    return Interaction(
        response=_response(item["response"], source, f"{where}.response"), request=request
    )


def _request(value: object, source: Path | None, where: str) -> RequestNote:
    item = _mapping(value, source, where, _REQUEST_KEYS)
    values: dict[str, str | None] = {}
    for key in REQUEST_TEXT_KEYS:
        got = item.get(key)
        if got is not None and not isinstance(got, str):
            raise ScriptError(source, f"{where}.{key}", f"must be a string, got {_kind(got)}")
        values[key] = got
    api = values["api"]
    if api is not None and api not in SUPPORTED_APIS:
        raise ScriptError(
            source, f"{where}.api", f"must be one of {', '.join(SUPPORTED_APIS)}; got {api!r}"
        )
    body = item.get("body")
    if body is not None:
        if not isinstance(body, dict):
            raise ScriptError(
                source, f"{where}.body", f"must be a mapping (the request JSON), got {_kind(body)}"
            )
        _check_json_value(body, source, f"{where}.body")
    return RequestNote(**values, body=body)


def _response(value: object, source: Path | None, where: str) -> ScriptedResponse:
    item = _mapping(value, source, where, _RESPONSE_KEYS)
    text = _optional_str(item.get("text"), source, f"{where}.text")
    thinking = _optional_str(item.get("thinking"), source, f"{where}.thinking")
    calls_raw = item.get("tool_calls")
    calls: tuple[ToolCall, ...] = ()
    if calls_raw is not None:
        if not isinstance(calls_raw, list):
            raise ScriptError(
                source, f"{where}.tool_calls", f"must be a list, got {_kind(calls_raw)}"
            )
        calls = tuple(
            _tool_call(c, source, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls_raw)
        )
    usage = Usage()
    if item.get("usage") is not None:
        usage = _usage(item["usage"], source, f"{where}.usage")
    error = None
    if item.get("error") is not None:
        error = _error(item["error"], source, f"{where}.error")
    latency = item.get("latency_ms", 0)
    if latency is None:
        latency = 0
    if not _is_int(latency) or latency < 0:
        raise ScriptError(
            source, f"{where}.latency_ms", f"must be a non-negative integer, got {latency!r}"
        )
    stop = item.get("stop")
    if stop is not None and stop not in STOP_REASONS:
        raise ScriptError(
            source, f"{where}.stop", f"must be one of {', '.join(STOP_REASONS)}; got {stop!r}"
        )
    if error is not None:
        if text is not None or thinking is not None or calls:
            raise ScriptError(
                source,
                f"{where}.error",
                "cannot be combined with text, thinking or tool_calls (an error has no content)",
            )
        if stop not in (None, "error"):
            raise ScriptError(
                source, f"{where}.stop", f"must be error with an error reply, got {stop!r}"
            )
        stop = "error"
    elif stop is None:
        stop = "tool_use" if calls else "stop"
    elif stop == "tool_use" and not calls:
        raise ScriptError(source, f"{where}.stop", "is tool_use but the response has no tool_calls")
    elif stop == "stop" and calls:
        raise ScriptError(
            source,
            f"{where}.stop",
            "is stop but the response has tool_calls; use tool_use or omit it",
        )
    ids = [c.id for c in calls if c.id is not None]
    if len(ids) != len(set(ids)):
        raise ScriptError(
            source, f"{where}.tool_calls", "has duplicate ids; give each call its own id"
        )
    return ScriptedResponse(
        text=text,
        thinking=thinking,
        tool_calls=calls,
        usage=usage,
        stop=cast(StopReason, stop),
        error=error,
        latency_ms=int(latency),
    )


def _tool_call(value: object, source: Path | None, where: str) -> ToolCall:
    item = _mapping(value, source, where, _TOOL_CALL_KEYS)
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ScriptError(source, f"{where}.name", f"must be a non-empty string, got {name!r}")
    arguments = item.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ScriptError(
            source,
            f"{where}.arguments",
            f"must be a mapping of argument names, got {_kind(arguments)}",
        )
    _check_json_value(arguments, source, f"{where}.arguments")
    call_id = item.get("id")
    if call_id is not None and (not isinstance(call_id, str) or not call_id):
        raise ScriptError(source, f"{where}.id", f"must be a non-empty string, got {call_id!r}")
    return ToolCall(name=name, arguments=arguments, id=call_id)


def _usage(value: object, source: Path | None, where: str) -> Usage:
    item = _mapping(value, source, where, _USAGE_KEYS)
    numbers: dict[str, int] = {}
    for key in _USAGE_KEYS:
        if key not in item or item[key] is None:
            continue
        got = item[key]
        if not _is_int(got) or got < 0:
            raise ScriptError(
                source, f"{where}.{key}", f"must be a non-negative integer, got {got!r}"
            )
        numbers[key] = int(got)
    return Usage(**numbers)


def _error(value: object, source: Path | None, where: str) -> ErrorReply:
    item = _mapping(value, source, where, _ERROR_KEYS)
    status = item.get("status")
    if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
        raise ScriptError(
            source, f"{where}.status", f"must be an HTTP error status 400-599, got {status!r}"
        )
    message = item.get("message")
    if not isinstance(message, str) or not message:
        raise ScriptError(
            source, f"{where}.message", f"must be a non-empty string, got {message!r}"
        )
    return ErrorReply(status=int(status), message=message)


def _mapping(
    value: object, source: Path | None, where: str, allowed: tuple[str, ...]
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ScriptError(source, where, f"must be a mapping, got {_kind(value)}")
    for key in value:
        if key not in allowed:
            raise ScriptError(
                source,
                f"{where}.{key}" if where != "(top level)" else str(key),
                f"{str(key)!r} is not a known key{_nearest(str(key), allowed)}; allowed: "
                f"{', '.join(allowed)}",
            )
    return cast(dict[str, Any], value)


def _nearest(key: str, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _optional_str(value: object, source: Path | None, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ScriptError(source, where, f"must be a string, got {_kind(value)}")


def _check_json_value(value: object, source: Path | None, where: str) -> None:
    # Arguments are sent as JSON, so YAML-only values (dates, sets, non-string keys) are rejected.
    if value is None or isinstance(value, str | bool | int | float):
        return
    if isinstance(value, list):
        for i, entry in enumerate(value):
            _check_json_value(entry, source, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, entry in value.items():
            if not isinstance(key, str):
                raise ScriptError(source, f"{where}", f"has a non-string key {key!r}; quote it")
            _check_json_value(entry, source, f"{where}.{key}")
        return
    raise ScriptError(source, where, f"is a {_kind(value)}, which JSON cannot carry; quote it")


def _check_encodable(value: object, source: Path | None, where: str) -> None:
    """Reject text no UTF-8 encoder accepts (a lone surrogate, which YAML's `"\\ud800"` gives).

    Every string of a script is sent to Pi or written as evidence; one that cannot be encoded
    would fail deep inside the server thread instead of here, where the file is named.
    """
    if isinstance(value, str):
        _check_text(value, source, where or "(top level)")
    elif isinstance(value, list):
        for i, entry in enumerate(value):
            _check_encodable(entry, source, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, entry in value.items():
            inner = f"{where}.{key}" if where else str(key)
            if isinstance(key, str):
                _check_text(key, source, where or "(top level)", "has a key that contains")
            _check_encodable(entry, source, inner)


def _check_text(text: str, source: Path | None, where: str, what: str = "contains") -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        raise ScriptError(
            source,
            where,
            f"{what} a lone surrogate (U+{code:04X}, character {exc.start}) that UTF-8 cannot "
            "carry; write the real character or drop the escape",
        ) from None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__
