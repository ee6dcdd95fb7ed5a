"""The tool calls a host refused or that failed, with the text the host gave back.

A scripted call with a wrong argument fails inside the host (Pi: `Validation failed for tool
"write"`) and the run still completes: without this, the reason is only in the transcript. The
text comes from the run's written (redacted) evidence, one line per failed call, bounded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..evidence import layout

LIMIT = 300  # characters of one call's error text
MOST = 5  # failed calls listed


def tool_errors(variant_dir: Path) -> list[str]:
    """`<tool>: <the host's error text>` for each failed tool call of the variant's run."""
    run = _json(variant_dir / layout.RUN)
    if not isinstance(run, Mapping):
        return []
    failed: dict[str, str] = {}
    for turn in run.get("turns") or []:
        for call in (turn.get("toolActivity") or []) if isinstance(turn, Mapping) else []:
            if isinstance(call, Mapping) and call.get("isError") is True:
                failed[str(call.get("toolCallId"))] = str(call.get("toolName"))
    if not failed:
        return []
    texts = _error_texts(_transcript(variant_dir, run), set(failed))
    lines = []
    for call_id, tool in list(failed.items())[:MOST]:
        text = " ".join(texts.get(call_id, "").split()) or "(no error text)"
        if len(text) > LIMIT:
            text = text[: LIMIT - 1] + "…"
        lines.append(f"{tool}: {text}")
    if len(failed) > MOST:
        lines.append(f"… and {len(failed) - MOST} more failed tool call(s)")
    return lines


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _transcript(variant_dir: Path, run: Mapping[str, Any]) -> list[Any]:
    inline = run.get("transcript")
    if isinstance(inline, list):  # the persistence fallback keeps the transcript inline
        return inline
    data = _json(variant_dir / layout.TRANSCRIPT)
    return data if isinstance(data, list) else []


def _error_texts(transcript: list[Any], ids: set[str]) -> dict[str, str]:
    """The result text of each call in `ids`, in whichever host's transcript form it is."""
    texts: dict[str, str] = {}
    for message in transcript:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        if role == "toolResult" and str(message.get("toolCallId")) in ids:  # Pi
            texts[str(message.get("toolCallId"))] = _text(message.get("content"))
        elif role == "tool" and isinstance(message.get("item"), Mapping):  # Codex
            item = message["item"]
            if str(item.get("id")) in ids:
                texts[str(item.get("id"))] = _codex_text(item)
        elif role == "user" and isinstance(message.get("content"), list):  # Claude Code
            for block in message["content"]:
                if _is_result(block) and str(block.get("tool_use_id")) in ids:
                    texts[str(block.get("tool_use_id"))] = _text(block.get("content"))
    return texts


def _is_result(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_result"


def _codex_text(item: Mapping[str, Any]) -> str:
    error = item.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        return str(error["message"])
    if isinstance(item.get("result"), Mapping):
        return _text(item["result"].get("content"))
    return str(item.get("aggregated_output") or error or item.get("status") or "")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [
        str(block.get("text"))
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, Mapping) and block.get("type") == "text"
    ]
    return "\n".join(parts)
