"""How a route writes a scripted answer for the host it serves: the opener of the route knows
the host and hands its renderer over (`hosts.dialect.renderer`); the server never guesses it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from .script import ScriptedResponse

# Writes a scripted answer's neutral tool calls as the calls of the host a route serves:
# (answer, its placeholders, the subject's workspace) → the answer that host is sent.
Renderer = Callable[[ScriptedResponse, Mapping[str, str], Path | None], ScriptedResponse]


def as_written(
    response: ScriptedResponse, placeholders: Mapping[str, str], workspace: Path | None
) -> ScriptedResponse:
    """The answer as the script wrote it: the renderer of a route that serves no host's tools."""
    return response
