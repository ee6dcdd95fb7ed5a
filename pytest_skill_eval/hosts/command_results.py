"""How a declared command ended, read back from the text its `run_command` tool gave the model.

Both command tools (Pi's extension and the MCP server of the other hosts) answer with the
command line, then its status line: `exit code: N`, `exit code: signal NAME` or `timed out
after T ms`. Every host passes that text on to its events, each in its own shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_STATUS = re.compile(
    r"^\$ [^\n]*\n(?:exit code: (?:(?P<code>-?\d+)|signal \S+)|timed out after \d+ ms)$",
    re.MULTILINE,
)
# Where the hosts put a tool result's text: a string, a list of content blocks, or a mapping
# holding one (`content`, `text`).
_TEXT_KEYS = ("text", "content")


def exit_code_of(output: object) -> tuple[bool, int | None]:
    """(found, exit code) of a command tool's result: found is False when `output` holds no
    status line; the code is None for a command killed by a signal or its timeout."""
    match = _STATUS.search(_text(output))
    if match is None:
        return False, None
    code = match.group("code")
    return True, int(code) if code is not None else None


def _text(output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(_text(item) for item in output)
    if isinstance(output, Mapping):
        return "\n".join(_text(output.get(key)) for key in _TEXT_KEYS)
    return ""
