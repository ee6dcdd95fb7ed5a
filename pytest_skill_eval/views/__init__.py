"""Views of saved evidence: the grade-first text view and the self-contained HTML report."""

from __future__ import annotations

from .html import render_html
from .text import ViewError, render_text

__all__ = ["ViewError", "render_html", "render_text"]
