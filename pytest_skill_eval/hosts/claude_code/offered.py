"""How Claude Code lists skills to the model: a `- name: description` line each under "The
following skills are available for use with the Skill tool:", in its system context. Past its
listing budget a skill is listed by name alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...modelserver.bodies import request_context
from ..offered import Listed, line_catalog

HEADER = "The following skills are available for use with the Skill tool:\n\n"


def catalog(body: Mapping[str, Any]) -> tuple[Listed, ...] | None:
    """The skills one request lists; None when it lists none."""
    context = request_context(body)
    return line_catalog(f"{context.system_prompt}\n{context.text}", HEADER, "\n\n")
