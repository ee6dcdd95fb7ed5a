"""How Pi lists skills to the model: an `<available_skills>` block in its system prompt,
each skill's name and description (XML-escaped), beside each skill's location."""

from __future__ import annotations

from ..offered import system_prompt_catalog as catalog

__all__ = ["catalog"]
