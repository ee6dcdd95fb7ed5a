"""esbuild's module factories compiled with their chunk: the change and its proof.

esbuild wraps each CommonJS module it bundles (and each ES module it initialises lazily) in a
factory: `var require_x = __commonJS({ "node_modules/x.js"(exports, module) { … } });`. V8
compiles such a method only when it is first called, so Node's compile cache (which holds what
V8 compiled before a module ran) never holds a factory, and every start parses and compiles
again each one it runs. Written as a parenthesised function expression,
`"node_modules/x.js": (function(exports, module) { … })`, a factory is compiled with its chunk
and the cache keeps it. Nothing the bundle's helpers see changes: the same property name (which
they read to call it), the same `this`, `arguments` and strictness, the same line numbers.

The change reads the chunk by lines, as esbuild prints it; the proof does not trust that. esbuild
prints every changed chunk and its original with the whitespace removed, and the two must differ
by exactly the changed heads and one `)` after each factory's closing brace: a head or a
parenthesis that landed in a string, a comment or anywhere else is a difference, and a `)` that
closes anything but its factory leaves a chunk esbuild cannot parse.

Gemini CLI runs from a copy of its bundle changed so (`gemini_cli/eager.py`); Pi's bundle is
changed so as it is built (`pi/bundle.py`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import HostError

# esbuild's factory wrappers, the line before a factory's head.
_OPENER = re.compile(r"^var [\w$]+ = __(?:commonJS|esm)\(\{$")
_HEAD = re.compile(r'^  ("(?:[^"\\]|\\.)+")\(([\w$]+(?:, [\w$]+)*)?\) \{$')
_CLOSE, _AFTER = "  }", "});"
# The same heads once esbuild has printed a file without whitespace.
_PRINTED_HEAD = re.compile(r'(__(?:commonJS|esm)\(\{"(?:[^"\\\n]|\\.)*")\(')


class FactoryError(HostError):
    """A bundle's factories could not be changed, or the change could not be proven."""


def eager_heads(text: str) -> tuple[str, int]:
    """`text` with each factory esbuild printed as a method written as a parenthesised function
    expression, and how many; FactoryError where a factory never ends as esbuild ends one. What
    this reads by lines alone (a factory-like text in a template literal) the proof refuses."""
    lines = text.split("\n")
    count, opened = 0, False
    for number, line in enumerate(lines):
        if opened:  # esbuild indents a factory's code: a line like its end inside is a string's
            if line == _CLOSE and number + 1 < len(lines) and lines[number + 1] == _AFTER:
                lines[number], opened = _CLOSE + ")", False
            continue
        head = _HEAD.match(line)
        if head and number and _OPENER.match(lines[number - 1]):
            lines[number] = f"  {head.group(1)}: (function({head.group(2) or ''}) {{"
            count, opened = count + 1, True
    if opened:
        raise FactoryError("the last factory never closes")
    return "\n".join(lines), count


def only_heads_differ(original: str, changed: str, heads: int) -> bool:
    """Whether `changed` is `original` (both printed by esbuild without whitespace) with exactly
    `heads` factory heads written as parenthesised function expressions, each closed by a `)`
    right after a `}`: nothing else differs."""
    expected, found = _PRINTED_HEAD.subn(r"\1:(function(", original)
    if found != heads or len(changed) - len(expected) != heads:
        return False
    i = j = 0  # in expected, in changed: every `)` skipped in changed is one of the closes
    while True:
        same = _common(expected, i, changed, j)
        i, j = i + same, j + same
        if i == len(expected) and j == len(changed):
            return True
        if j == len(changed) or changed[j - 1 : j + 1] != "})":
            return False
        j += 1


def _common(a: str, i: int, b: str, j: int) -> int:
    """How many characters `a[i:]` and `b[j:]` share before they differ (compared in slices
    that double while they match, then halved to the first difference)."""
    shared, step = 0, 4096
    while True:
        step = min(step, len(a) - i - shared, len(b) - j - shared)
        if step <= 0:
            return shared
        if a[i + shared : i + shared + step] == b[j + shared : j + shared + step]:
            shared, step = shared + step, step * 2
            continue
        low, high = 0, step  # the first `low` match; they differ before `high`
        while high - low > 1:
            middle = (low + high) // 2
            start_a, start_b = i + shared + low, j + shared + low
            if a[start_a : i + shared + middle] == b[start_b : j + shared + middle]:
                low = middle
            else:
                high = middle
        return shared + low


def prove(esbuild: Path, original: Path, copy: Path, changed: Mapping[str, int], out: Path) -> None:
    """FactoryError unless each chunk named in `changed` (in `copy`) and its original (in
    `original`), printed by esbuild without whitespace into `out`, differ by exactly its changed
    heads; `out` is removed once they are compared."""
    names = sorted(changed)
    sources = {f"{side}/{Path(n).stem}": base / n for n in names for side, base in
               (("original", original), ("eager", copy))}  # fmt: skip
    try:
        print_without_whitespace(esbuild, sources, out)
        for name in names:
            before, after = (
                (out / side / name).read_text("utf-8") for side in ("original", "eager")
            )
            if not only_heads_differ(before, after, changed[name]):
                raise FactoryError(f"{copy / name}: the change is not the factories' heads alone")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def eager_chunks(directory: Path, names: Iterable[str]) -> dict[str, int]:
    """The chunks `names` in `directory`, their factories made eager in place; how many heads
    changed in each chunk that had any."""
    changed = {}
    try:
        for name in names:
            text, heads = eager_heads((directory / name).read_text(encoding="utf-8"))
            if heads:
                (directory / name).write_text(text, encoding="utf-8")
                changed[name] = heads
    except UnicodeDecodeError as error:
        raise FactoryError(f"{directory}: a chunk is not UTF-8 ({error})") from None
    return changed


def print_without_whitespace(esbuild: Path, sources: Mapping[str, Path], out: Path) -> None:
    """esbuild prints each source to `out/<name>.js` without whitespace (one run, all cores);
    FactoryError where it cannot parse one."""
    argv = [str(esbuild), "--minify-whitespace", "--log-level=error", f"--outdir={out}"]
    argv += [f"{name}={path}" for name, path in sources.items()]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as failure:
        raise FactoryError(f"esbuild could not run: {failure}") from failure
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no output"])[0]
        raise FactoryError(
            f"esbuild could not print the copy (exit {done.returncode}): {first[:200]}"
        )
