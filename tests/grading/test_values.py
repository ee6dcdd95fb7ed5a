"""JSON pointers, strict equality, UTF-16 text and JSON.stringify as JavaScript defines them."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
from typing import Any

import pytest

from pytest_skill_eval.grading.values import (
    PointerSyntaxError,
    js_stringify,
    json_equal,
    parse_pointer,
    resolve_pointer,
    text_excerpt,
    text_sha256,
    utf16_length,
    utf16_prefix,
    utf16_sort_key,
)

DOCUMENT = {"a": [10, 20], "": "blank", "a/b": "slash", "m~n": "tilde", "~1": "literal"}


@pytest.mark.parametrize(
    ("pointer", "tokens"),
    [
        ("", ()),
        ("/", ("",)),
        ("/a/0", ("a", "0")),
        ("/a~1b", ("a/b",)),
        ("/m~0n", ("m~n",)),
        # ~01 is "~1", not "/": ~1 is unescaped before ~0.
        ("/~01", ("~1",)),
        ("//x", ("", "x")),
    ],
)
def test_parse_pointer(pointer: str, tokens: tuple[str, ...]) -> None:
    assert parse_pointer(pointer) == tokens


@pytest.mark.parametrize("pointer", ["a", "a/b", "/~2", "/a~", "/~", "#/a"])
def test_parse_pointer_rejects_non_rfc6901(pointer: str) -> None:
    with pytest.raises(PointerSyntaxError):
        parse_pointer(pointer)


@pytest.mark.parametrize(
    ("pointer", "found", "value"),
    [
        ("", True, DOCUMENT),
        ("/", True, "blank"),
        ("/a/0", True, 10),
        ("/a/1", True, 20),
        ("/a~1b", True, "slash"),
        ("/m~0n", True, "tilde"),
        ("/~01", True, "literal"),
        ("/a/2", False, None),
        ("/a/-", False, None),
        ("/a/01", False, None),
        ("/a/00", False, None),
        ("/a/-1", False, None),
        ("/a/+1", False, None),
        ("/a/1e0", False, None),
        ("/a/ 1", False, None),
        ("/a/١", False, None),  # a non-ASCII digit is not an index
        ("/a/length", False, None),
        ("/a/0/x", False, None),
        ("/missing", False, None),
        ("/a~1b/0", False, None),
    ],
)
def test_resolve_pointer(pointer: str, found: bool, value: Any) -> None:
    assert resolve_pointer(DOCUMENT, pointer) == (found, value)


def test_resolve_pointer_keeps_a_present_null() -> None:
    assert resolve_pointer({"x": None}, "/x") == (True, None)
    assert resolve_pointer({"x": None}, "/y") == (False, None)


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (False, None, False),
        (0, None, False),
        ("", None, False),
        (1, 1.0, True),
        (3.0, 3, True),
        (0, -0.0, True),  # documented: the zeros are not told apart
        (0.1 + 0.2, 0.3, False),
        ("1", 1, False),
        (None, None, True),
        (True, True, True),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ({"a": 1}, {"a": 1, "b": None}, False),
        ({"a": None}, {"b": None}, False),
        ([1, 2], [2, 1], False),
        ([1], [1, 1], False),
        ([], {}, False),
        ([{"x": [True]}], [{"x": [1]}], False),
        ([{"x": [1.0, None]}], [{"x": [1, None]}], True),
    ],
)
def test_json_equal(left: Any, right: Any, equal: bool) -> None:
    assert json_equal(left, right) is equal
    assert json_equal(right, left) is equal


@pytest.mark.parametrize(
    ("text", "units"), [("", 0), ("abc", 3), ("é", 1), ("😀", 2), ("a😀b", 4), ("✅", 1)]
)
def test_utf16_length(text: str, units: int) -> None:
    assert utf16_length(text) == units
    assert utf16_length(text) == len(text.encode("utf-16-le")) // 2


def test_utf16_prefix_never_splits_a_surrogate_pair() -> None:
    assert utf16_prefix("a" * 239 + "😀", 240) == "a" * 239
    assert utf16_prefix("a" * 238 + "😀z", 240) == "a" * 238 + "😀"
    assert utf16_prefix("😀" * 200, 240) == "😀" * 120
    assert utf16_prefix("short", 240) == "short"


def test_utf16_sort_key_is_code_unit_order() -> None:
    # Code-point order puts U+FFFF first; JavaScript's UTF-16 order puts the emoji first.
    assert sorted(["\uffff", "😀", "a"]) == ["a", "\uffff", "😀"]
    assert sorted(["\uffff", "😀", "a"], key=utf16_sort_key) == ["a", "😀", "\uffff"]


def test_text_sha256_hashes_utf8() -> None:
    assert text_sha256("é") == hashlib.sha256(b"\xc3\xa9").hexdigest()
    assert text_sha256("\ud800") == text_sha256("\ufffd")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"path": "é", "n": 1.0}, '{"path":"é","n":1}'),
        ({"id": "unit-tests"}, '{"id":"unit-tests"}'),
        ([1e-7, 1.5e-5, 1e21, 1e20, -0.0], "[1e-7,0.000015,1e+21,100000000000000000000,0]"),
        ({"b": 1, "10": 2, "2": 3, "a": 4}, '{"2":3,"10":2,"b":1,"a":4}'),
        ("\ud800x", '"\\ud800x"'),
        ('line\nbreak\t"q"\u2028', '"line\\nbreak\\t\\"q\\"\u2028"'),
        (2**53 + 1, "9007199254740992"),
        (float("nan"), "null"),
        (None, "null"),
    ],
)
def test_js_stringify(value: Any, text: str) -> None:
    assert js_stringify(value) == text


def test_js_stringify_equals_compact_json_dumps_for_plain_values() -> None:
    value = {"path": "docs/é 😀.md", "edits": [{"oldText": "a\\b", "newText": None}], "n": 3}
    assert js_stringify(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-(2**60), 2**60)
    if kind == 2:
        return rng.choice([rng.uniform(-1e3, 1e3), rng.random() * 10 ** rng.randint(-30, 30)])
    if kind == 3:
        return float(rng.randint(-(10**22), 10**22))
    if kind == 4:
        return "".join(rng.choice('aé😀\n"\\/\u2028\x01~') for _ in range(rng.randint(0, 6)))
    if kind == 5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["a", "b", "0", "7", "10", "01", "-1", "é", "4294967295", "4294967294"]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node, which Pi runs on")
def test_js_stringify_matches_node() -> None:
    rng = random.Random(20261130)
    values = [_random_value(rng) for _ in range(400)]
    lines = "\n".join(json.dumps(v, ensure_ascii=False) for v in values)
    script = (
        "const lines = require('fs').readFileSync(0, 'utf8').split('\\n');"
        "process.stdout.write(JSON.stringify(lines.map((l) => JSON.stringify(JSON.parse(l)))));"
    )
    node = subprocess.run(
        ["node", "-e", script], input=lines, capture_output=True, text=True, check=True
    )
    expected = json.loads(node.stdout)
    assert [js_stringify(json.loads(line)) for line in lines.split("\n")] == expected


@pytest.mark.parametrize(
    ("expect", "text", "value", "at"),
    [
        # not-contains: around the unwanted match.
        ("not-contains", "a" * 300 + "SECRET-ISH" + "b" * 300, "SECRET-ISH", 220),
        # equals: around the first character that differs.
        ("equals", "x" * 200 + "1" + "y" * 50, "x" * 200 + "2", 120),
        # contains: the longest start of the value found ("ye" of "yes").
        ("contains", "n" * 100 + "ye!", "yes", 20),
        # contains, nothing of the value found: the start.
        ("contains", "z" * 500, "yes", 0),
        # Near the start: the excerpt cannot begin before the text.
        ("not-contains", "ab unwanted", "unwanted", 0),
    ],
)
def test_text_excerpt_starts_80_before_the_anchor(
    expect: str, text: str, value: str, at: int
) -> None:
    excerpt = text_excerpt(expect, text, value)
    assert excerpt["excerptAt"] == at
    assert excerpt["excerpt"] == text[at : at + 240]


def test_text_excerpt_is_bounded_in_utf16_units_and_splits_no_pair() -> None:
    # 239 units of "a" then a pair: the pair would need units 240 and 241, so it is left out.
    excerpt = text_excerpt("contains", "a" * 239 + "\U0001f600" + "b", "zzz")
    assert excerpt == {"excerpt": "a" * 239, "excerptAt": 0}
    # 80 characters before the match at character 100 is character 20; the offset counts
    # UTF-16 units, two for each of the 20 emoji before it.
    excerpt = text_excerpt("not-contains", "\U0001f600" * 100 + "no", "no")
    assert excerpt["excerptAt"] == 40
