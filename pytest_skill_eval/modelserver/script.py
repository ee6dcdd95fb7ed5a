"""Scripts (hand-written cassettes) as data: interactions, their responses and request notes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_skill_eval.errors import ModelProviderError

StopReason = Literal["stop", "tool_use", "length", "error"]
MatchMode = Literal["order", "body"]

STOP_REASONS: tuple[StopReason, ...] = ("stop", "tool_use", "length", "error")
MATCH_MODES: tuple[MatchMode, ...] = ("order", "body")
SUPPORTED_APIS: tuple[str, ...] = (
    "openai-completions",
    "anthropic-messages",
    "openai-responses",
    "gemini-generate-content",
)

REQUEST_TEXT_KEYS = ("api", "model", "sha256", "excerpt")


class ScriptError(ModelProviderError):
    """A script/cassette file that cannot be used; names the file, the location and the fix."""

    def __init__(self, path: Path | None, location: str, problem: str) -> None:
        self.path = path
        self.location = location
        self.problem = problem
        where = str(path) if path is not None else "<inline script>"
        super().__init__(f"{where}: {location}: {problem}" if location else f"{where}: {problem}")


@dataclass(frozen=True)
class Usage:
    """Token usage the scripted model reports for one response."""

    input: int = 100
    output: int = 10
    cache_read: int = 0
    cache_write: int = 0


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a scripted response; `id` is generated when omitted."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    # The Responses `namespace` of a host's namespaced tool (Codex's MCP tools); never scripted.
    namespace: str | None = None


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error answer instead of a stream."""

    status: int
    message: str


@dataclass(frozen=True)
class ScriptedResponse:
    """The neutral form of one model answer, independent of any wire format."""

    text: str | None = None
    thinking: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop: StopReason = "stop"
    error: ErrorReply | None = None
    latency_ms: int = 0


@dataclass(frozen=True)
class RequestNote:
    """The optional `request` part of an interaction (written when recording).

    `body` is the normalised request body whose canonical JSON hashes to `sha256`; it is kept so
    a `match: body` mismatch can show what changed.
    """

    api: str | None = None
    model: str | None = None
    sha256: str | None = None
    excerpt: str | None = None
    body: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Interaction:
    """One model request/response pair, consumed in order."""

    response: ScriptedResponse
    request: RequestNote | None = None


@dataclass(frozen=True)
class TokenCount:
    """One recorded answer to a token-count request (Anthropic's `count_tokens`)."""

    input_tokens: int
    request: RequestNote | None = None


@dataclass(frozen=True)
class Script:
    """A validated script: the interactions answered in order.

    `token_counts` are the recorded answers to token-count requests, answered in their own
    order beside the interactions; a count the script does not hold is estimated.
    """

    interactions: tuple[Interaction, ...]
    match: MatchMode = "order"
    version: int = 1
    source: Path | None = None
    sha256: str | None = None
    token_counts: tuple[TokenCount, ...] = ()


def undeclared_tool_calls(script: Script, tools: Sequence[str]) -> list[tuple[int, str]]:
    """(1-based interaction, tool name) of each scripted call to a tool outside `tools`.

    The subject is offered only its group's tools, so such a call can only fail when it runs;
    a recorded cassette may hold one on purpose, so it is worth a warning, not a refusal.
    """
    allowed = set(tools)
    return [
        (number, call.name)
        for number, interaction in enumerate(script.interactions, start=1)
        for call in interaction.response.tool_calls
        if call.name not in allowed
    ]
