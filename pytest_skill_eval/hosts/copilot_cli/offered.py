"""How Copilot CLI lists skills to the model: an `<available_skills>` block in its system
prompt (inside its `skill` tool's guidelines), each skill's name and description."""

from __future__ import annotations

from ..offered import system_prompt_catalog as catalog

__all__ = ["catalog"]
