"""How evidence values become HTML: the one Jinja2 environment, its escaper, clipping, links.

The environment escapes every `{{ }}` on output (autoescape, with `_escape` as the one escaper),
so no agent or author text reaches the page unescaped, and an unknown name is an error, not an
empty string. Control characters are shown as visible symbols: a raw CR would otherwise become
a line break in HTML.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

CLIP_CHARS = 3000
CLIP_LINES = 40
TEMPLATES = Path(__file__).resolve().parent / "templates"

# Control characters (other than TAB and LF) become their visible Unicode control pictures.
_CONTROL = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}
_CONTROL[0x7F] = "\u2421"


def esc(value: Any) -> str:
    """HTML-escape any value; control characters become visible, lone surrogates `?`."""
    text = value if isinstance(value, str) else str(value)
    text = text.encode("utf-8", "replace").decode("utf-8").translate(_CONTROL)
    return html.escape(text, quote=True)


def _escape(value: Any) -> Any:
    """Every `{{ }}` result on its way out: macro output passes, anything else is escaped.

    Only the templates' own macros produce markup; every value the views pass in is data.
    """
    if isinstance(value, Markup):
        return value
    return Markup(esc(value))


@dataclass(frozen=True, slots=True)
class Clip:
    """How a text is shown: whole, or its head with the whole text nested."""

    empty: bool
    head: str | None
    chars: int
    lines: int


def clip_text(text: str) -> Clip:
    """Cut at CLIP_LINES lines or CLIP_CHARS characters; `head` is None when nothing is cut."""
    lines = text.split("\n")
    if len(text) <= CLIP_CHARS and len(lines) <= CLIP_LINES:
        return Clip(text == "", None, len(text), len(lines))
    return Clip(False, "\n".join(lines[:CLIP_LINES])[:CLIP_CHARS], len(text), len(lines))


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


ENVIRONMENT = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=StrictUndefined,
    finalize=_escape,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
ENVIRONMENT.globals.update(clip_text=clip_text, pretty=_pretty)


@dataclass(frozen=True, slots=True)
class Link:
    """A raw artifact: its label and relative href, or no href when it is not on disk."""

    label: str
    href: str | None


class Links:
    """Relative links from the report's location to evidence inside the result directory."""

    def __init__(self, link_base: Path) -> None:
        self.link_base = link_base

    def href(self, target: Path, directory: bool = False) -> str:
        """The quoted relative href of `target` (a trailing `/` for a directory)."""
        rel = os.path.relpath(target, self.link_base).replace(os.sep, "/")
        # Quoting every ':' means no path can ever read as a URL scheme.
        return quote(rel, safe="/") + ("/" if directory else "")

    def to(self, label: str, target: Path) -> Link:
        """A link to `target`, or a link without href when nothing is on disk there."""
        if not target.exists() and not target.is_symlink():
            return Link(label, None)
        return Link(label, self.href(target, target.is_dir()))


def objects(value: Any) -> list[Mapping[str, Any]]:
    """The JSON objects of a list that may be absent or hold other things."""
    return [v for v in value or [] if isinstance(v, Mapping)]
