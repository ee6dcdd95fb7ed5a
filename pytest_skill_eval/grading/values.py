"""JSON values as the JavaScript original sees them: pointers, strict equality, UTF-16 text.

Grades must not depend on the language the grader is written in, so everything here mirrors
what a JSON document means in JavaScript where Python would otherwise differ.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from jsonpointer import JsonPointer, JsonPointerException

from ..errors import SkillEvalError

_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
# JavaScript orders integer-like keys ("array indices", below 2**32 - 1) first, ascending.
_MAX_ARRAY_INDEX = 2**32 - 2
_MAX_SAFE_INTEGER = 2**53


class PointerSyntaxError(SkillEvalError, ValueError):
    """A JSON pointer that RFC 6901 does not allow."""


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """Split an RFC 6901 pointer into unescaped reference tokens (parsed by `jsonpointer`)."""
    try:
        return tuple(JsonPointer(pointer).parts)
    except JsonPointerException as error:
        if pointer.startswith("/"):
            raise PointerSyntaxError("'~' in a JSON pointer must be followed by 0 or 1") from error
        raise PointerSyntaxError("a JSON pointer must be empty or start with '/'") from error


def resolve_pointer(document: Any, pointer: str) -> tuple[bool, Any]:
    """Resolve a pointer: (True, value) when the field exists, (False, None) when absent.

    `jsonpointer` parses; the steps follow the reference, which looks each token up as an own
    property of a JavaScript object or array, so that a grade does not depend on the grader:

    - an array step needs a canonical index below the length: "-" (RFC 6901's "after the
      last element"), leading zeros, signs and non-ASCII digits are absent, not errors;
    - "length" is absent too: a pointer names JSON data, not a property of a JavaScript array;
    - a step into a string, number, boolean or null is absent.
    """
    current = document
    for token in parse_pointer(pointer):
        if isinstance(current, Mapping):
            if token not in current:
                return False, None
            current = current[token]
        elif isinstance(current, list | tuple):
            if not _ARRAY_INDEX.fullmatch(token) or int(token) >= len(current):
                return False, None
            current = current[int(token)]
        else:
            return False, None
    return True, current


def json_equal(left: Any, right: Any) -> bool:
    """Strict deep equality of JSON values with no type coercion.

    `true` never equals `1`; `1` equals `1.0` because JSON has one number type. `0` equals
    `-0.0`: Python's JSON parser reads `-0` as the integer 0, so telling the zeros apart would
    depend on how the number was spelt. Object key order is irrelevant; array order matters.
    """
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, str) or isinstance(right, str):
        return isinstance(left, str) and isinstance(right, str) and left == right
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(
            json_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return False


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's `String.prototype.length`."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def utf16_prefix(text: str, units: int) -> str:
    """The longest prefix of at most `units` UTF-16 code units that splits no surrogate pair.

    When the limit falls inside a pair, the whole character is left out, so the prefix can be
    one unit shorter than the limit.
    """
    used = 0
    for position, char in enumerate(text):
        width = 2 if ord(char) > 0xFFFF else 1
        if used + width > units:
            return text[:position]
        used += width
    return text


def utf16_sort_key(text: str) -> bytes:
    """Sort key giving JavaScript's default code-unit string order."""
    return text.encode("utf-16-be", "surrogatepass")


def text_sha256(text: str) -> str:
    """sha256 of the UTF-8 encoding of text; lone surrogates become U+FFFD as in Node."""
    return hashlib.sha256(_SURROGATE.sub("\ufffd", text).encode("utf-8")).hexdigest()


def js_stringify(value: Any) -> str:
    """Compact `JSON.stringify(value)`.

    Equal to `json.dumps(value, separators=(",", ":"), ensure_ascii=False)` except where
    JavaScript differs: numbers print as JavaScript prints them (`1.0` → `1`, `1e-07` → `1e-7`,
    integers beyond 2**53 are rounded to doubles), integer-like object keys come first in
    ascending order, and lone surrogates are escaped.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if abs(value) <= _MAX_SAFE_INTEGER else _js_number(float(value))
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return _js_string(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_stringify(item) for item in value) + "]"
    if isinstance(value, Mapping):
        keys = [str(key) for key in value]
        indexes = sorted(
            (k for k in keys if _ARRAY_INDEX.fullmatch(k) and int(k) <= _MAX_ARRAY_INDEX), key=int
        )
        index_set = set(indexes)
        ordered = indexes + [k for k in keys if k not in index_set]
        return "{" + ",".join(_js_string(k) + ":" + js_stringify(value[k]) for k in ordered) + "}"
    raise TypeError(f"value of type {type(value).__name__} is not JSON")


def _js_string(text: str) -> str:
    encoded = json.dumps(text, ensure_ascii=False)
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", encoded)


def _js_number(number: float) -> str:
    """ECMAScript Number::toString for a finite double (NaN and infinities become null)."""
    if not math.isfinite(number):
        return "null"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    # repr gives the shortest round-tripping digits, the same digits JavaScript picks.
    _, digit_tuple, raw_exponent = Decimal(repr(abs(number))).normalize().as_tuple()
    exponent = int(raw_exponent)  # always an int for a finite number
    digits = "".join(str(d) for d in digit_tuple)
    count = len(digits)
    point = exponent + count
    if count <= point <= 21:
        text = digits + "0" * (point - count)
    elif 0 < point <= 21:
        text = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    else:
        power = point - 1
        mark = f"e{'+' if power >= 0 else '-'}{abs(power)}"
        text = digits + mark if count == 1 else digits[0] + "." + digits[1:] + mark
    return sign + text


EXCERPT_UNITS = 240
"""How much observed text a failed text check keeps beside its hash, in UTF-16 code units."""
_EXCERPT_LEAD = 80
_EXCERPT_PROBE = 64


def text_excerpt(expect: str, text: str, value: str) -> dict[str, Any]:
    """A bounded excerpt of `text` around where `value` would match, and where it starts.

    `not-contains` centres on the unwanted match; `equals` on the first character that
    differs; `contains` on the longest start of `value` (at most 64 characters) found in the
    text, or the start of the text. The excerpt begins up to 80 characters before that point
    and holds at most 240 UTF-16 code units, never half a surrogate pair. `at` is its offset
    in UTF-16 code units.
    """
    start = max(0, _anchor(expect, text, value) - _EXCERPT_LEAD)
    return {
        "excerpt": utf16_prefix(text[start:], EXCERPT_UNITS),
        "excerptAt": utf16_length(text[:start]),
    }


def _anchor(expect: str, text: str, value: str) -> int:
    if expect == "not-contains":
        return max(0, text.find(value))
    if expect == "equals":
        same = 0
        for ours, theirs in zip(text, value, strict=False):
            if ours != theirs:
                break
            same += 1
        return same
    for length in range(min(len(value), _EXCERPT_PROBE), 0, -1):
        found = text.find(value[:length])
        if found >= 0:
            return found
    return 0
