"""pytest-skill-eval: evidence of whether a SKILL.md package changes what a coding agent does."""

from __future__ import annotations

__version__ = "0.1.0"
