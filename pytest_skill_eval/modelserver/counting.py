"""Token counts: Anthropic's `POST /v1/messages/count_tokens`, which Claude Code asks before it
hands the model a large file. A scripted route estimates the count; a recorded one replays it.

The estimate is the characters of every string in the request's `system`, `messages` and
`tools`, divided by 4 and rounded up (the usual rough four characters a token): deterministic,
and about what a provider would count, so Claude Code lets the model see about as much of a
large file as it would live.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pytest_skill_eval.modelserver.wire import WireReply

COUNT_PATH = "/v1/messages/count_tokens"
CHARACTERS_PER_TOKEN = 4
_COUNTED_KEYS = ("system", "messages", "tools")


def estimate_tokens(body: Mapping[str, Any]) -> int:
    """The estimated input tokens of a count request (see the module's formula)."""
    characters = sum(_characters(body.get(key)) for key in _COUNTED_KEYS)
    return math.ceil(characters / CHARACTERS_PER_TOKEN)


def _characters(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Mapping):
        return sum(_characters(item) for item in value.values())
    if isinstance(value, list):
        return sum(_characters(item) for item in value)
    return 0


def count_reply(input_tokens: int) -> WireReply:
    """The JSON answer to a count request."""
    data = json.dumps({"input_tokens": input_tokens}).encode("utf-8")
    return WireReply(status=200, headers=(("Content-Type", "application/json"),), chunks=(data,))


def counted_tokens(data: bytes) -> int | None:
    """The `input_tokens` of a provider's answer to a count request (None: not such an answer)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    tokens = value.get("input_tokens") if isinstance(value, dict) else None
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
        return tokens
    return None
