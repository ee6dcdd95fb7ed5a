"""Secrets are never persisted: every known secret becomes `[redacted:NAME]` before a write.

A `Redactor` is built from ``{name: value}`` (inherited variables, installed credentials,
upstream keys) and recognises each value as it is, as it appears inside a JSON string (both
``ensure_ascii`` forms) and base64-encoded. Every non-empty value is redacted, however short:
a short value is noisy (it redacts innocent text too) but never kept. Structured evidence is
redacted string by string, so JSON stays JSON whatever the value (an occurrence outside every
string, such as digits in a number, is left); byte streams are redacted with a carry-over of
``len(longest form) - 1`` bytes, so a value split across reads is caught.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, AnyStr

MARKER = "[redacted:{name}]"
PREFIX_MIN = 8  # characters of a secret's beginning that count as the secret, mid-stream

Counts = dict[str, int]


def marker(name: str) -> str:
    """The text that replaces a secret named `name`."""
    return MARKER.format(name=name)


def _encode(text: str) -> bytes:
    # An environment value that is not UTF-8 holds its bytes as surrogate escapes (os.environ).
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _forms(value: str) -> list[str]:
    raw = _encode(value)
    return [
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        base64.b64encode(raw).decode("ascii"),
        base64.urlsafe_b64encode(raw).decode("ascii"),
    ]


def add(total: Counts, more: Mapping[str, int]) -> Counts:
    """Add `more` into `total` (in place) and return it."""
    for name, count in more.items():
        total[name] = total.get(name, 0) + count
    return total


class Redactor:
    """Replaces every form of every secret by its marker; an empty one changes nothing."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self.secrets: dict[str, str] = {k: v for k, v in (secrets or {}).items() if v}
        # Longest form first, so a value that contains another is replaced whole.
        owner: dict[str, str] = {}
        for name, value in self.secrets.items():
            for form in _forms(value):
                owner.setdefault(form, name)
        forms = sorted(owner, key=len, reverse=True)
        self._owner = owner
        self._owner_bytes = {_encode(form): n for form, n in owner.items()}
        self._text = re.compile("|".join(map(re.escape, forms))) if forms else None
        self._bytes = re.compile(b"|".join(re.escape(_encode(f)) for f in forms)) if forms else None
        self._prefixed = [(f, n) for f, n in owner.items() if len(f) > PREFIX_MIN]
        self.longest = max((len(_encode(f)) for f in forms), default=0)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def merged(self, other: Redactor) -> Redactor:
        """A redactor for the secrets of both (names of `self` win)."""
        return Redactor({**other.secrets, **self.secrets})

    def redact_text(self, text: str) -> tuple[str, Counts]:
        """`text` with every secret replaced, and how often each name was replaced."""
        if self._text is None:
            return text, {}
        return _replaced(self._text, self._owner, text, marker)

    def redact_bytes(self, data: bytes) -> tuple[bytes, Counts]:
        """`data` with every secret replaced, and how often each name was replaced."""
        if self._bytes is None:
            return data, {}
        return _replaced(self._bytes, self._owner_bytes, data, lambda n: marker(n).encode())

    def redact_value(self, value: Any) -> tuple[Any, Counts]:
        """A JSON-like value with every secret replaced in every string, keys included."""
        counts: Counts = {}

        def walk(item: Any) -> Any:
            if isinstance(item, str):
                text, found = self.redact_text(item)
                add(counts, found)
                return text
            if isinstance(item, list | tuple):
                return [walk(v) for v in item]
            if isinstance(item, dict):
                return {walk(k): walk(v) for k, v in item.items()}
            return item

        if self._text is None:
            return value, counts
        return walk(value), counts

    def redact_json_line(self, line: bytes) -> tuple[bytes, Counts]:
        """One JSON Lines record: redacted inside its strings so it stays JSON.

        A line without a secret is returned byte for byte; one that is not JSON is redacted as
        bytes.
        """
        if self._bytes is None or self._bytes.search(line) is None:
            return line, {}
        body = line.rstrip(b"\r\n")
        ending = line[len(body) :]
        try:
            parsed = json.loads(body.decode("utf-8"))
        except ValueError:
            return self.redact_bytes(line)
        clean, counts = self.redact_value(parsed)
        if not counts:
            return line, counts  # only outside strings (a digit in a number): nothing to hide
        text = json.dumps(clean, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8", "surrogatepass") + ending, counts

    def redact_unfinished(self, value: Any) -> tuple[Any, Counts]:
        """A value whose strings may end inside a secret (a reply still streaming), cut there.

        Only a beginning of at least `PREFIX_MIN` characters is recognised: a shorter one is
        too common to say anything.
        """
        counts: Counts = {}

        def cut(text: str) -> str:
            for form, name in self._prefixed:
                tail = text[-(len(form) - 1) :]
                at = tail.find(form[:PREFIX_MIN])
                while at >= 0:
                    if form.startswith(tail[at:]):
                        counts[name] = counts.get(name, 0) + 1
                        return text[: len(text) - len(tail) + at] + marker(name)
                    at = tail.find(form[:PREFIX_MIN], at + 1)
            return text

        def walk(item: Any) -> Any:
            if isinstance(item, str):
                return cut(item)
            if isinstance(item, list):
                return [walk(v) for v in item]
            if isinstance(item, dict):
                return {k: walk(v) for k, v in item.items()}
            return item

        if not self._prefixed:
            return value, counts
        return walk(value), counts

    def stream(self) -> StreamRedactor:
        """A redactor for bytes that arrive in pieces."""
        return StreamRedactor(self)

    def records(self) -> RecordStream:
        """A redactor for a host's JSON Lines, fragments of streamed replies included."""
        return RecordStream(self)


class StreamRedactor:
    """Redacts a byte stream fed in arbitrary pieces; holds back at most `longest - 1` bytes."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._carry = b""
        self.counts: Counts = {}

    def feed(self, data: bytes) -> bytes:
        """The redacted bytes that are safe to write now."""
        pattern = self._redactor._bytes
        if pattern is None:
            return data
        buffer = self._carry + data
        # A match starting before `safe` ends inside `buffer`: no form is longer than `longest`.
        safe = max(0, len(buffer) - (self._redactor.longest - 1))
        out = bytearray()
        cut = 0
        for match in pattern.finditer(buffer):
            if match.start() >= safe:
                break
            out += buffer[cut : match.start()]
            name = self._redactor._owner_bytes[match.group(0)]
            self.counts[name] = self.counts.get(name, 0) + 1
            out += marker(name).encode("utf-8")
            cut = match.end()
        end = max(cut, safe)
        out += buffer[cut:end]
        self._carry = buffer[end:]
        return bytes(out)

    def flush(self) -> bytes:
        """Whatever is still held back, redacted (the end of the stream)."""
        data, self._carry = self._carry, b""
        clean, counts = self._redactor.redact_bytes(data)
        add(self.counts, counts)
        return clean


_FRAGMENT_KEYS = ("text", "partial_json", "thinking")
_HOLD_LIMIT = 4096  # fragment records held at most before they are written anyway


def _fragment_path(value: Any, depth: int = 0) -> list[str] | None:
    """Where a streamed record keeps its fragment: a string `delta`, or `delta.text` and kin."""
    if not isinstance(value, dict) or depth > 4:
        return None
    delta = value.get("delta")
    if isinstance(delta, str):
        return ["delta"]
    if isinstance(delta, dict):
        for key in _FRAGMENT_KEYS:
            if isinstance(delta.get(key), str):
                return ["delta", key]
    for key, item in value.items():
        found = _fragment_path(item, depth + 1)
        if found is not None:
            return [key, *found]
    return None


class RecordStream:
    """JSON Lines from a host, redacted record by record and across streamed fragments.

    A host streams a reply as records that each carry a fragment (``delta``); a secret split
    across them is in no single record. Fragment records are held until the next record of
    another kind, then a secret found in their joined fragments is cut out of each of them.
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held: list[tuple[Any, list[str], bytes]] = []
        self.counts: Counts = {}

    def feed(self, line: bytes) -> tuple[bytes, bytes]:
        """(bytes to write now, the record redacted on its own, for parsing) for one line."""
        clean, found = self._redactor.redact_json_line(line)
        add(self.counts, found)
        if not self._redactor:
            return clean, clean
        path: list[str] | None = None
        try:
            record = json.loads(clean)
        except ValueError:
            record = None
        else:
            # A record of a reply still streaming may end inside a secret: cut it there. Its
            # fragment is left whole, for `flush` to join with the fragments around it.
            path = _fragment_path(record)
            piece = _get(record, path) if path is not None else ""
            record, cut = self._redactor.redact_unfinished(record)
            if path is not None:
                _set(record, path, piece)
            if cut:
                add(self.counts, cut)
                ending = clean[len(clean.rstrip(b"\r\n")) :]
                text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
                clean = text.encode("utf-8", "surrogatepass") + ending
        if path is None:
            return self.flush() + clean, clean
        self._held.append((record, path, clean))
        written = self.flush() if len(self._held) >= _HOLD_LIMIT else b""
        return written, clean

    def flush(self) -> bytes:
        """The held fragment records, with every secret their fragments spell cut out."""
        held, self._held = self._held, []
        if not held:
            return b""
        pieces = [_get(record, path) for record, path, _ in held]
        joined = "".join(pieces)
        pattern = self._redactor._text
        spans = [
            (m.start(), m.end(), self._redactor._owner[m.group(0)])
            for m in (pattern.finditer(joined) if pattern is not None else ())
        ]
        if not spans:
            return b"".join(line for _, _, line in held)
        out = bytearray()
        start = 0
        for (record, path, line), piece in zip(held, pieces, strict=True):
            end = start + len(piece)
            new, changed = _cut(piece, start, spans, self.counts)
            if changed:
                _set(record, path, new)
                ending = line[len(line.rstrip(b"\r\n")) :]
                text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
                line = text.encode("utf-8", "surrogatepass") + ending
            out += line
            start = end
        return bytes(out)


def _cut(
    piece: str, start: int, spans: list[tuple[int, int, str]], counts: Counts
) -> tuple[str, bool]:
    """`piece` (at `start` of the joined text) without the parts of `spans` it holds."""
    end = start + len(piece)
    result: list[str] = []
    cursor = start
    changed = False
    for a, b, name in spans:
        if b <= start or a >= end:
            continue
        changed = True
        result.append(piece[cursor - start : max(a, start) - start])
        if a >= start:  # the occurrence begins here: its marker goes here
            result.append(marker(name))
            counts[name] = counts.get(name, 0) + 1
        cursor = min(b, end)
    result.append(piece[cursor - start :])
    return "".join(result), changed


def _get(record: Any, path: list[str]) -> str:
    for key in path:
        record = record[key]
    return str(record)


def _set(record: Any, path: list[str], value: str) -> None:
    for key in path[:-1]:
        record = record[key]
    record[path[-1]] = value


class Tally:
    """How many times each name was redacted in each file, as `run.json` records it."""

    def __init__(self) -> None:
        self.by_name: dict[str, dict[str, int]] = {}

    def add(self, file: str, counts: Mapping[str, int]) -> None:
        """Count the redactions made in `file` (a path relative to the variant directory)."""
        for name, count in counts.items():
            if count:
                per_file = self.by_name.setdefault(name, {})
                per_file[file] = per_file.get(file, 0) + count

    def record(self) -> dict[str, dict[str, int]]:
        """``{NAME: {file: count}}``, sorted; never a value."""
        return {n: dict(sorted(f.items())) for n, f in sorted(self.by_name.items())}


def credential_values(document: Any, prefix: str) -> dict[str, str]:
    """Every string in a credentials document (Pi's auth.json), named by where it sits.

    Fields that describe rather than authenticate (``type``, ``provider``) and values shorter
    than 8 characters are left alone: they are not credentials and would redact innocent text.
    """
    found: dict[str, str] = {}

    def walk(item: Any, where: str) -> None:
        if isinstance(item, dict):
            for key, value in item.items():
                if key not in ("type", "provider"):
                    walk(value, f"{where}.{key}" if where else str(key))
        elif isinstance(item, list):
            for index, value in enumerate(item):
                walk(value, f"{where}.{index}")
        elif isinstance(item, str) and len(item) >= 8:
            found[f"{prefix}:{where}"] = item

    walk(document, "")
    return found


def _replaced(
    pattern: re.Pattern[AnyStr],
    owner: Mapping[AnyStr, str],
    data: AnyStr,
    mark: Callable[[str], AnyStr],
) -> tuple[AnyStr, Counts]:
    """`data` with each form `pattern` finds replaced by its owner's `mark`, and how often each
    name was replaced."""
    counts: Counts = {}

    def replace(match: re.Match[AnyStr]) -> AnyStr:
        name = owner[match.group(0)]
        counts[name] = counts.get(name, 0) + 1
        return mark(name)

    return pattern.sub(replace, data), counts
