"""What a model request says, whatever its wire format: its excerpt, system prompt and context.

Chat completions and Anthropic messages carry `messages` (Anthropic's system prompt in
`system`); the Responses API carries `instructions` and `input` items (developer messages, user
and assistant messages, tool calls and their outputs); the Gemini API carries
`systemInstruction` and `contents` (`parts`: text, `functionCall`, `functionResponse`). The
server keeps every request it received, so what the model saw can be observed the same way on
every host: `observations` turns them into the records Pi's context observer writes (`surface`
`system-prompt` once per turn, `provider-context` per request).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Roles whose text is the system prompt rather than the conversation.
_SYSTEM_ROLES = ("system", "developer")
_TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output")


@dataclass(frozen=True)
class ContextMessage:
    """One entry of the conversation a request carries: its role and its text."""

    role: str | None
    text: str


@dataclass(frozen=True)
class RequestContext:
    """The system prompt of a request and the conversation it carries, as text."""

    system_prompt: str
    messages: tuple[ContextMessage, ...]

    @property
    def text(self) -> str:
        """The conversation's texts, non-empty ones joined by newlines (as the observer does)."""
        return "\n".join(m.text for m in self.messages if m.text)


def request_excerpt(body: Mapping[str, Any], limit: int = 200) -> str | None:
    """The first `limit` characters of the last user or tool message of a request body."""
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") in ("user", "tool"):
                return content_text(message.get("content"))[:limit]
        return None
    contents = body.get("contents")
    if isinstance(contents, list):
        for content in reversed(contents):
            if isinstance(content, dict) and content.get("role") == "user":
                return gemini_text(content.get("parts"))[:limit]
        return None
    items = body.get("input")
    if isinstance(items, list):
        for item in reversed(items):
            if not isinstance(item, dict):
                continue
            if item.get("type") in _TOOL_OUTPUTS:
                return content_text(item.get("output"))[:limit]
            if item.get("role") == "user":
                return content_text(item.get("content"))[:limit]
    return None


def request_context(body: Mapping[str, Any]) -> RequestContext:
    """The system prompt and conversation of a request in any of the four wire formats."""
    if isinstance(body.get("contents"), list):
        return _gemini_context(body)
    system: list[str] = []
    entries: list[ContextMessage] = []
    if "system" in body:
        system.append(content_text(body.get("system")))
    if isinstance(body.get("instructions"), str):
        system.append(body["instructions"])
    raw = body.get("messages")
    if not isinstance(raw, list):
        raw = body.get("input")
    if isinstance(raw, str):
        raw = [{"role": "user", "content": raw}]
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        role = item.get("role")
        kind = item.get("type")
        if role in _SYSTEM_ROLES:
            system.append(content_text(item.get("content")))
        elif kind in _TOOL_OUTPUTS:
            entries.append(ContextMessage("tool", content_text(item.get("output"))))
        elif kind in ("function_call", "custom_tool_call", "reasoning"):
            continue  # the model's own calls and reasoning carry no context text
        else:
            text = content_text(item.get("content"))
            entries.append(ContextMessage(role if isinstance(role, str) else None, text))
    return RequestContext("\n".join(t for t in system if t), tuple(entries))


def _gemini_context(body: Mapping[str, Any]) -> RequestContext:
    instruction = body.get("systemInstruction")
    parts = instruction.get("parts") if isinstance(instruction, dict) else instruction
    entries: list[ContextMessage] = []
    contents = body.get("contents")
    for content in contents if isinstance(contents, list) else []:
        if not isinstance(content, dict):
            continue
        role = "assistant" if content.get("role") == "model" else content.get("role")
        raw = content.get("parts")
        parts_of: list[Any] = raw if isinstance(raw, list) else []
        answers = [p for p in parts_of if isinstance(p, dict) and "functionResponse" in p]
        if answers:
            entries += [ContextMessage("tool", gemini_text([p])) for p in answers]
            continue
        entries.append(
            ContextMessage(role if isinstance(role, str) else None, gemini_text(parts_of))
        )
    return RequestContext(gemini_text(parts), tuple(entries))


def gemini_text(parts: Any) -> str:
    """The text of Gemini `parts`: texts (not the model's thoughts) and function responses;
    the model's own function calls carry no context text."""
    texts: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict) or part.get("thought") is True:
            continue
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        answer = part.get("functionResponse")
        response = answer.get("response") if isinstance(answer, dict) else None
        if isinstance(response, dict):
            output = response.get("output", response.get("error"))
            texts.append(output if isinstance(output, str) else content_text([response]))
    return "\n".join(t for t in texts if t)


def content_text(content: Any) -> str:
    """The text of message content in any wire format: a string, or parts with text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif "content" in part:
                    texts.append(content_text(part["content"]))
                elif isinstance(part.get("output"), str):
                    texts.append(part["output"])
        return "\n".join(t for t in texts if t)
    return ""


def observations(requests: Iterable[tuple[int, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Context-observation records for `(turn, body)` pairs in arrival order.

    Each turn's first request gives its `system-prompt` record; every request a
    `provider-context` record numbered within its turn and overall, as Pi's observer numbers
    them. Which request belongs to which turn is the host's knowledge, so the caller says.
    """
    records: list[dict[str, Any]] = []
    seen: dict[int, int] = {}
    for provider_request, (turn, body) in enumerate(requests, start=1):
        context = request_context(body)
        in_turn = seen.get(turn, 0) + 1
        seen[turn] = in_turn
        if in_turn == 1:
            records.append(
                {
                    "turn": turn,
                    "kind": "context",
                    "surface": "system-prompt",
                    "characters": _utf16(context.system_prompt),
                    "text": context.system_prompt,
                }
            )
        records.append(
            {
                "turn": turn,
                "kind": "context",
                "surface": "provider-context",
                "providerRequest": provider_request,
                "requestInTurn": in_turn,
                "characters": _utf16(context.text),
                "text": context.text,
                "messages": _messages(context.messages),
            }
        )
    return records


def _messages(messages: Sequence[ContextMessage]) -> list[dict[str, Any]]:
    return [{"role": m.role, "toolName": None, "text": m.text} for m in messages]


def _utf16(text: str) -> int:
    # The observer counts JavaScript string length: UTF-16 code units.
    return len(text.encode("utf-16-le")) // 2
