"""Views of saved evidence: the grade-first text view and the self-contained HTML report.

Imported on first use: an xdist worker needs only `present` and `toolerrors` (for its
sub-results), never the views themselves, nor Jinja2 behind the HTML report.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .html import render_html
    from .text import ViewError, render_text

__all__ = ["ViewError", "render_html", "render_text"]

_HOMES = {"render_html": ".html", "ViewError": ".text", "render_text": ".text"}


def __getattr__(name: str) -> Any:
    """`render_html`, `render_text` and `ViewError`, imported from their module on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_HOMES[name], __name__), name)
