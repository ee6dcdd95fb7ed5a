"""The Markdown summary renders on GitHub as the text it holds, whoever wrote that text.

Every field of the summary comes from a result directory, which may be a CI artifact of an
untrusted job, and excerpts are model output. Rendered by cmark-gfm (GitHub's renderer), no field
becomes a link, autolink, image, HTML, emphasis, code or a table cell break, and no rendered text
outside code is one GitHub rewrites into a mention, an issue or commit reference or a link.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_skill_eval.evidence import json_bytes, write_manifest, write_seal
from pytest_skill_eval.evidence.read import DamagedEvidenceError
from pytest_skill_eval.views.gfm import md_code_block, md_text
from pytest_skill_eval.views.summary import append_step_summary, render_markdown
from tests.support.github_markdown import read, shown
from tests.views.conftest import build_aggregate, build_result

HOSTILE = [
    "[x](http://evil)",
    "![i](http://evil/i.png)",
    "<img src=x>",
    "http://evil.example",
    "https://evil.example/path?q=1",
    "www.evil.example",
    "www.1.example",
    "evil@example.com",
    "mailto:evil@example.com",
    "xmpp:evil@example.com",
    "evil.example.com",
    "x.com",
    "@org/team",
    "@user",
    "#1",
    "org/repo#12",
    "org/repo@1a2b3c4d",
    "GH-7",
    "1a2b3c4d5e6f",
    "a|b",
    "line\nbreak",
    "&lt;&#64;&amp;",
    "<details><summary>x</summary>y</details>",
    "*em* _u_ **b** ~~s~~ `code` $x$",
    "<http://evil>",
    "\\[x\\](http://evil)",
    "\u202eevil\u202c \x00\x1b[31m",
    "[^1]: footnote",
    "- [ ] task",
]
# Fragments GitHub or CommonMark treat specially, mixed with any text.
PIECES = st.sampled_from([
    "@", "#", ":", "//", ".", "-", "www", "http", "mailto:", "gh", "[", "]", "(", ")", "!",
    "<", ">", "&", ";", "|", "`", "*", "_", "~", "\\", "$", "\n", "\r", " ", "a", "7", "com",
    "deadbee", "1a2b3c4", "org/repo", "\u2060", "\u202e",
])  # fmt: skip
HOSTILE_TEXT = st.lists(st.one_of(PIECES, st.text(max_size=6)), max_size=24).map("".join)
EXPECTED_TAGS = {"h2", "p", "strong", "ul", "li", "table", "thead", "tbody", "tr", "th", "td"}
# The summary folds its details itself: exactly its own blocks, never one from data.
FOLDS = {"details", "summary"}


def _visible(text: str) -> str:
    """What a field must show once rendered: one line, controls as symbols, no joiners."""
    flat = " ".join(text.split())
    return shown("".join(_symbol(c) for c in flat))


def _symbol(c: str) -> str:
    code = ord(c)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    if 0x80 <= code < 0xA0 or code in (0x061C, 0x200E, 0x200F):
        return "\ufffd"
    if 0x202A <= code < 0x202F or 0x2066 <= code < 0x206A:
        return "\ufffd"
    return c


def _document(fields: list[str]) -> str:
    """The summary's shapes: a heading, a bold list item, and a table row of five cells."""
    cells = " | ".join(md_text(f) for f in fields[:5])
    return "\n".join([
        f"## skill-eval: {md_text(fields[0])}",
        "",
        f"- **{md_text(fields[1])}**: {md_text(fields[2])}",
        "",
        "| group | check | kind | baseline | candidate |",
        "|---|---|---|---|---|",
        f"| {cells} |",
        "",
    ])  # fmt: skip


def _assert_literal(fields: list[str]) -> None:
    seen = read(_document(fields))
    assert set(seen.tags) <= EXPECTED_TAGS, seen.tags
    assert seen.links == []
    assert seen.rewrites() == []
    if _visible(fields[1]):
        assert [shown(s) for s in seen.strong] == [_visible(fields[1])]
    header, row = seen.rows
    assert header == ["group", "check", "kind", "baseline", "candidate"]
    assert [shown(c) for c in row] == [_visible(f) for f in fields[:5]]


def test_each_known_attack_renders_as_its_text() -> None:
    for hostile in HOSTILE:
        _assert_literal([hostile] * 5)


@settings(max_examples=300, deadline=None)
@given(st.lists(HOSTILE_TEXT, min_size=5, max_size=5))
def test_any_text_in_any_field_renders_as_its_text(fields: list[str]) -> None:
    _assert_literal(fields)


@settings(max_examples=200, deadline=None)
@given(HOSTILE_TEXT, st.integers(min_value=1, max_value=10))
def test_an_excerpt_stays_inside_its_code_block(text: str, run: int) -> None:
    excerpt = f"{text}{'`' * run}{text}"
    markdown = "\n".join(["- g / c:", "", *md_code_block(excerpt, indent="  "), "", "after"])
    seen = read(markdown)
    expected = "\n".join(
        "".join(_symbol(c) if c != "\t" else c for c in line)
        for line in re.split(r"\r\n|\r|\n", excerpt)
    )
    assert seen.code_blocks == [expected + "\n"]
    assert [p for p in seen.prose if p.strip()][-1] == "after"  # the block closed there
    assert seen.links == []


def test_a_backtick_run_of_each_length_stays_inside_the_fence() -> None:
    for run in range(1, 11):
        excerpt = f"x{'`' * run}[a](http://evil) @user #1"
        fence = md_code_block(excerpt)
        assert len(fence[0]) == max(3, run + 1)
        assert read("\n".join([*fence, "", "after"])).code_blocks == [excerpt + "\n"]


def _hostile_result(base: Path, hostile: str) -> Path:
    """The fixed result with every id, name, state and excerpt a forged artifact could set."""
    result = build_result(base)
    summary_path = result / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    # The reader takes an id without '/' or '\\' (and a host without '@'): a file name.
    named = hostile.replace("/", "\u2215").replace("\\", "\u29f5").replace("\x00", "")
    summary.update(id=f"{named}-id", state=hostile)
    renamed = []
    for number, group_dir in enumerate(sorted((result / "groups").iterdir())):
        group_id, host = f"{named}{number}", f"{named.replace('@', '#')}host"
        group = json.loads((group_dir / "group.json").read_text(encoding="utf-8"))
        group.update(id=group_id, host=host, state=hostile)
        (group_dir / "group.json").write_bytes(json_bytes(group))
        grade_path = group_dir / "deterministic-grade.json"
        grade = json.loads(grade_path.read_text(encoding="utf-8"))
        for check in grade["checks"]:
            check.update(id=f"{hostile}-{check['id']}", kind=hostile)
            if check["state"] == "fail":
                check["observed"] = {"excerpt": hostile + "`" * 5, "excerptAt": 7}
        grade_path.write_bytes(json_bytes(grade))
        (group_dir / "manifest.json").unlink()
        write_manifest(group_dir)
        moved = group_dir.with_name(f"{group_id}@{host}")
        os.rename(group_dir, moved)
        renamed.append(group)
    summary["groups"] = renamed
    summary_path.write_bytes(json_bytes(summary))
    (result / "seal.json").unlink()
    write_seal(result)
    seal = json.loads((result / "seal.json").read_text(encoding="utf-8"))
    seal["root"] = f"`{hostile}`"  # a root that is no hash: shown as text, never code
    (result / "seal.json").unlink()
    (result / "seal.json").write_bytes(json_bytes(seal))
    return result


def test_a_forged_result_directory_puts_no_link_or_mention_into_the_summary(
    tmp_path: Path,
) -> None:
    for number, hostile in enumerate(HOSTILE):
        result = _hostile_result(tmp_path / str(number), hostile)
        step_summary = tmp_path / f"step-{number}.md"
        append_step_summary(result, str(step_summary))
        for markdown in (
            render_markdown(result),
            render_markdown(result, excerpts=True),
            step_summary.read_text(encoding="utf-8"),
        ):
            seen = read(markdown)
            allowed = {*EXPECTED_TAGS, *FOLDS, "a", "pre", "code"}
            assert set(seen.tags) <= allowed, (hostile, seen.tags)
            assert seen.tags.count("details") == markdown.count("\n<details><summary>")
            assert seen.links == ["report.html"], hostile
            assert seen.rewrites() == [], hostile
            checks = [shown(row[2]) for row in seen.rows[1:] if len(row) == 5]
            assert _visible(f"{hostile}-baseline-entry") in checks
            comparisons = [shown(row[1]) for row in seen.rows[1:] if len(row) == 6]
            assert "skill-read-on-first-turn" in comparisons, hostile
        excerpts = read(render_markdown(result, excerpts=True)).code_blocks
        assert excerpts, hostile
        for block in excerpts:
            assert _visible(json.dumps(hostile + "`" * 5, ensure_ascii=False)) in block


def test_a_forged_aggregate_puts_no_link_or_mention_into_the_summary(tmp_path: Path) -> None:
    for number, hostile in enumerate(HOSTILE):
        aggregate = build_aggregate(tmp_path / str(number), "aggregate-resolved")
        path = aggregate / "aggregate.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        named = hostile.replace("/", "\u2215").replace("\\", "\u29f5").replace("\x00", "")
        data.update(id=f"{named}-id", state=hostile)
        for group in data["groups"]:
            group.update(id=f"{named}-{group['id']}", host=f"{named.replace('@', '#')}h")
            for check in group["checks"]:
                check.update(id=f"{hostile}-{check['id']}", kind=hostile)
            for comparison in group.get("comparisons") or []:
                comparison["id"] = hostile
        path.write_bytes(json_bytes(data))
        markdown = render_markdown(aggregate)
        seen = read(markdown)
        assert set(seen.tags) <= {*EXPECTED_TAGS, *FOLDS, "a", "code"}, (hostile, seen.tags)
        assert seen.tags.count("details") == markdown.count("\n<details><summary>")
        assert seen.links == ["report.html"], hostile
        assert seen.rewrites() == [], hostile
        checks = [shown(row[2]) for row in seen.rows[1:] if len(row) == 5]
        assert _visible(f"{hostile}-baseline-reads-skill") in checks
        comparisons = [shown(row[1]) for row in seen.rows[1:] if len(row) == 6]
        assert _visible(hostile) in comparisons, hostile


def test_a_forged_aggregate_names_no_trial_outside_its_results_directory(tmp_path: Path) -> None:
    aggregate = build_aggregate(tmp_path / "runs", "aggregate-resolved")
    outside = build_result(tmp_path / "elsewhere")
    path = aggregate / "aggregate.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    escape = os.path.relpath(outside, aggregate.parent)
    data["trials"] = [{**data["trials"][0], "id": escape}]
    path.write_bytes(json_bytes(data))
    with pytest.raises(DamagedEvidenceError, match=r"/trials/0/id: an unsafe id"):
        render_markdown(aggregate)
