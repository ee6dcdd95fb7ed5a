"""A variant's declared context as every host gives it to the model: read from the delivery
manifest the evaluator writes, and rendered in exactly the markup Pi's guard extension uses."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import HostError


def _escape_text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _escape_attribute(value: str) -> str:
    return _escape_text(value).replace('"', "&quot;").replace("'", "&apos;")


def load_context(manifest: str) -> list[Mapping[str, object]]:
    """The entries of the context delivery manifest (schema_version 1); none without one."""
    if not manifest:
        return []
    try:
        data = json.loads(Path(manifest).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise HostError(f"context manifest {manifest} cannot be read: {error}") from error
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise HostError(f"context manifest {manifest}: schema_version must be 1")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise HostError(f"context manifest {manifest}: entries must be an array")
    return [e for e in entries if isinstance(e, dict)]


def declared_context_block(entries: Sequence[Mapping[str, object]]) -> str:
    """The declared context, in exactly the markup Pi's guard gives the model."""
    lines = ["<declared_context>"]
    for entry in entries:
        lines.append(f'<context declared-path="{_escape_attribute(str(entry["declaredPath"]))}">')
        files = entry.get("files", [])
        for item in files if isinstance(files, list) else []:
            path, content = _escape_attribute(str(item["path"])), _escape_text(item["content"])
            lines.append(f'<file path="{path}">\n{content}</file>')
        lines.append("</context>")
    lines.append("</declared_context>")
    return "\n".join(lines)


# One line a neutral tool, in the words of the isolated prompt.
TOOL_SNIPPETS = {
    "read": "Read a file",
    "write": "Create or overwrite a file",
    "edit": "Replace exact text in a file",
    "skill": "Load one of the listed skills",
    "run_command": "Run one declared command in the workspace",
}


def isolated_prompt(
    host: str,
    tools: Sequence[str],
    neutral: Mapping[str, str],
    skill_tool: str,
    entries: Sequence[Mapping[str, object]],
    cwd: Path,
    *,
    listing: str | None = None,
) -> str:
    """The evaluator's system prompt, Pi's isolated prompt in a host's words: `host`'s name, a
    line a tool offered by its own name (`neutral` gives the neutral tool it is; any other is a
    declared command), the tool that loads a skill, and `listing` where the host puts its own
    list of skills."""
    snippet = {name: TOOL_SNIPPETS[tool] for name, tool in neutral.items()}
    lines = [f"- {name}: {snippet.get(name, TOOL_SNIPPETS['run_command'])}" for name in tools]
    sections = [
        f"You are an expert coding assistant operating inside {host} for a skill "
        "evaluation. Use only the tools and resources listed below.",
        "Available tools:\n" + ("\n".join(lines) if lines else "(none)"),
        "\n".join(
            [
                "Guidelines:",
                f"- Use {skill_tool} to load a skill when the task matches its description.",
                "- Resolve relative paths in a skill against that skill's directory "
                "(the parent of its SKILL.md).",
                "- Be concise in your responses.",
            ]
        ),
    ]
    if listing is not None:
        sections.append(listing)
    if entries:
        sections.append(declared_context_block(entries))
    sections.append(f"Current working directory: {cwd}")
    return "\n\n".join(sections)
