"""esbuild's module factories made eager: the change by lines, and its proof by esbuild.

The real bundles this is used on are proven end to end: Gemini CLI's copy
(tests/hosts/test_gemini_eager.py, tests/hosts/test_gemini_eager_e2e.py) and Pi's bundle
(tests/plugin/test_pi_bundle_e2e.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.hosts import factories
from pytest_skill_eval.hosts.binaries import esbuild_binary
from pytest_skill_eval.hosts.factories import FactoryError, eager_heads, only_heads_differ
from tests.support.files import write
from tests.support.paths import REPO

ESBUILD = esbuild_binary(REPO / "node_modules" / "@google" / "gemini-cli")

# What esbuild prints for a bundled CommonJS module and a lazily initialised ES module.
CHUNK = """\
import { __commonJS, __esm } from "./chunk-helpers.js";
var require_a = __commonJS({
  "node_modules/a/index.js"(exports, module) {
    module.exports = { a: 1 };
  }
});
var init_b = __esm({
  "packages/core/src/b.ts"() {
    "use strict";
    b = 2;
  }
});
var b;
var notes = {
  "method"(x) {
    return x;
  }
};
export { require_a, init_b, notes };
"""


def test_each_factory_head_becomes_a_parenthesised_function_and_nothing_else_changes() -> None:
    changed, heads = eager_heads(CHUNK)

    assert heads == 2
    assert changed.count("\n") == CHUNK.count("\n")  # line for line: the same line numbers
    assert '  "node_modules/a/index.js": (function(exports, module) {' in changed
    assert '  "packages/core/src/b.ts": (function() {' in changed
    assert changed.count("  })\n});") == 2
    assert '  "method"(x) {' in changed  # an object's method elsewhere is left alone
    differing = [
        (old, new)
        for old, new in zip(CHUNK.splitlines(), changed.splitlines(), strict=True)
        if old != new
    ]
    assert len(differing) == 4


def test_a_factory_that_never_closes_where_esbuild_closes_one_is_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(FactoryError, match="the last factory never closes"):
        eager_heads(CHUNK.split("var init_b")[0].replace("  }\n});", "  }\n"))
    # Closed otherwise than esbuild closes one: read as ending at the next factory's end,
    # which leaves a parenthesis open, so esbuild refuses to print it.
    unclosed = CHUNK.replace("  }\n});\nvar init_b", "  };\n});\nvar init_b")
    changed, heads = eager_heads(unclosed)
    assert heads == 1
    with pytest.raises(FactoryError, match="esbuild could not print the copy"):
        _printed(tmp_path, unclosed, changed)


def test_a_template_line_like_a_factorys_end_is_read_past() -> None:
    """A template literal in a factory whose line begins as esbuild ends a factory (as jiti's
    wrapper in Pi's bundle does): the factory still ends at its own close."""
    template = CHUNK.replace(
        "    module.exports = { a: 1 };\n",
        "    module.exports = `(function () {\n});`;\n",
    )
    changed, heads = eager_heads(template)
    assert heads == 2
    assert "(function () {\n});`;\n  })\n});\nvar init_b" in changed


def _printed(tmp_path: Path, original: str, changed: str) -> tuple[str, str]:
    """Both texts as the build has esbuild print them."""
    assert ESBUILD is not None
    write(tmp_path / "original.js", original)
    write(tmp_path / "changed.js", changed)
    sources = {name: tmp_path / f"{name}.js" for name in ("original", "changed")}
    factories.print_without_whitespace(ESBUILD, sources, tmp_path / "printed")
    return tuple(  # type: ignore[return-value]
        (tmp_path / "printed" / f"{name}.js").read_text("utf-8") for name in ("original", "changed")
    )


def test_esbuild_proves_the_heads_alone_changed(tmp_path: Path) -> None:
    changed, heads = eager_heads(CHUNK)
    before, after = _printed(tmp_path, CHUNK, changed)
    assert only_heads_differ(before, after, heads)
    assert not only_heads_differ(before, after, heads - 1)
    assert not only_heads_differ(before, before, heads)


def test_a_factory_shaped_text_inside_a_string_fails_the_proof(tmp_path: Path) -> None:
    """A template literal holding what looks like a factory: the transform changes the string,
    which the proof sees (the text printed inside the string keeps its line breaks)."""
    literal = (
        "var sample = `\nvar require_x = __commonJS({\n"
        '  "node_modules/x.js"(exports, module) {\n    x();\n  }\n});\n`;\n'
    )
    original = CHUNK.replace("var b;\n", "var b;\n" + literal)
    changed, heads = eager_heads(original)
    assert heads == 3  # the transform alone cannot tell
    before, after = _printed(tmp_path, original, changed)
    assert not only_heads_differ(before, after, heads)


def test_a_change_of_the_same_length_beside_the_heads_fails_the_proof(tmp_path: Path) -> None:
    """What the counts cannot see: one character changed leaves the lengths and the number of
    heads as they were; the alignment finds it."""
    changed, heads = eager_heads(CHUNK)
    before, after = _printed(tmp_path, CHUNK, changed)
    assert only_heads_differ(before, after, heads)
    assert "a:1" in after
    assert not only_heads_differ(before, after.replace("a:1", "a:2"), heads)


def test_a_close_moved_to_another_brace_is_not_even_printed(tmp_path: Path) -> None:
    """The proof reads what esbuild printed, so the changed text parses: a factory's `)` after
    another `}` (the same count, the same length) leaves a parenthesis open, and esbuild
    refuses the file."""
    changed, _ = eager_heads(CHUNK)
    moved = changed.replace("  })\n});\nvar init_b", "  }\n});\nvar init_b").replace(
        "    return x;\n  }\n};", "    return x;\n  })\n};"
    )
    assert len(moved) == len(changed)
    with pytest.raises(FactoryError, match="esbuild could not print the copy"):
        _printed(tmp_path, CHUNK, moved)


def test_a_parenthesis_that_is_not_a_factorys_close_fails_the_proof(tmp_path: Path) -> None:
    changed, heads = eager_heads(CHUNK)
    moved = changed.replace("    return x;\n  }\n};", "    return x;\n  })\n};").replace(
        '  "method"(x) {', '  "method": (function(x) {'
    )
    before, after = _printed(tmp_path, CHUNK, moved)
    assert not only_heads_differ(before, after, heads)
