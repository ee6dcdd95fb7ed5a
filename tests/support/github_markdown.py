"""What GitHub makes of a Markdown summary: cmark-gfm's HTML (the renderer GitHub uses, with its
table, strikethrough, autolink and raw HTML as written) and the rewrites GitHub applies to the
rendered text outside code and links: mentions, issue and commit references, autolinks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

from pytest_skill_eval.views.gfm import WORD_JOINER

# What GitHub would turn into a link in rendered text (outside <code>, <pre> and <a>).
GITHUB_REWRITES = {
    "mention": re.compile(r"@[A-Za-z0-9_-]"),
    "reference": re.compile(r"#\w"),
    "GH reference": re.compile(r"(?i)gh-\d"),
    "scheme": re.compile(r"://|(?i:mailto|xmpp):\w"),
    "www": re.compile(r"(?i)www\."),
    "e-mail": re.compile(r"[\w.+-]@[\w-]"),
    "domain": re.compile(r"\w\.[A-Za-z]"),
    "commit": re.compile(r"\w@[0-9a-f]{7}"),
}  # fmt: skip


@dataclass
class Rendered:
    """The tags of the rendered page, its text outside code and links, its code blocks, links."""

    tags: list[str] = field(default_factory=list)
    prose: list[str] = field(default_factory=list)
    code_blocks: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    strong: list[str] = field(default_factory=list)

    def rewrites(self) -> list[tuple[str, str]]:
        """Each (kind, text) GitHub would make a link, mention or reference of."""
        return [
            (kind, text)
            for text in self.prose
            for kind, pattern in GITHUB_REWRITES.items()
            if pattern.search(text)
        ]


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.seen = Rendered()
        self.open: list[str] = []
        self.cell: list[str] | None = None
        self.bold: list[str] | None = None
        self.pre: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.tags.append(tag)
        self.open.append(tag)
        if tag == "a":
            self.seen.links.append(dict(attrs).get("href") or "")
        elif tag == "tr":
            self.seen.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "strong":
            self.bold = []
        elif tag == "pre":
            self.pre = []

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            del self.open[len(self.open) - 1 - self.open[::-1].index(tag) :]
        if tag in ("td", "th") and self.cell is not None:
            self.seen.rows[-1].append("".join(self.cell))
            self.cell = None
        elif tag == "strong" and self.bold is not None:
            self.seen.strong.append("".join(self.bold))
            self.bold = None
        elif tag == "pre" and self.pre is not None:
            self.seen.code_blocks.append("".join(self.pre))
            self.pre = None

    def handle_data(self, data: str) -> None:
        for part in (self.cell, self.bold, self.pre):
            if part is not None:
                part.append(data)
        if not {"code", "pre", "a"} & set(self.open):
            self.seen.prose.append(data)


def render(markdown: str) -> str:
    """cmark-gfm's HTML, raw HTML kept (GitHub filters it later; here it must not occur)."""
    html: str = cmarkgfm.github_flavored_markdown_to_html(
        markdown, options=Options.CMARK_OPT_UNSAFE
    )
    return html


def read(markdown: str) -> Rendered:
    """What the rendered page holds."""
    reader = _Reader()
    reader.feed(render(markdown))
    reader.close()
    return reader.seen


def shown(text: str) -> str:
    """Text as a reader sees it: the invisible word joiners gone."""
    return text.replace(WORD_JOINER, "")
