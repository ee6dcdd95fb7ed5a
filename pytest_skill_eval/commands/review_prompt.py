"""The advisory reviewer's prompt and its reply: anonymous labels, evidence shown, answers.

The reviewer sees runs A and B, never which is the baseline: labels come from one random bit,
and every path that would name a variant is scrubbed from what it is shown (reference §9.3).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..common.wording import counted
from ..grading.values import utf16_length
from ..views.present import declared_turns, mapping, tool_outcome
from ..views.text import VARIANTS, GroupEvidence

VERDICTS = ("yes", "no", "unclear")
LABELS = ("A", "B")
RESPONSE_LIMIT = 8000
ARGUMENT_LIMIT = 300
_FENCE_OPEN = re.compile(r"\A```(?:json)?\s*", re.IGNORECASE)
_FENCE_CLOSE = re.compile(r"\s*```\Z")


def label_bit() -> int:
    """One cryptographically random bit: 0 shows baseline as A, 1 shows candidate as A."""
    return secrets.randbits(1)


def assign_labels(bit: int) -> dict[str, str]:
    """The label → variant mapping for a random bit."""
    first, second = VARIANTS if bit == 0 else tuple(reversed(VARIANTS))
    return {"A": first, "B": second}


# ---------------------------------------------------------------------------------------------
# The prompt


def truncate(text: str, limit: int) -> str:
    """At most `limit` UTF-16 units, never splitting a character, with a note of what was cut."""
    total = utf16_length(text)
    if total <= limit:
        return text
    kept, used = [], 0
    for char in text:
        width = 2 if ord(char) > 0xFFFF else 1
        if used + width > limit:
            break
        kept.append(char)
        used += width
    return "".join(kept) + f"… [truncated {total - used} characters]"


def path_scrubber(group: GroupEvidence) -> Callable[[str], str]:
    """Replace each run's own directory in text by `{{workspace}}`/`{{run}}`: paths there name
    the variant, which the reviewer must not learn."""
    prefixes: dict[str, str] = {}
    for variant in VARIANTS:
        directories = {str(group.directory / variant)}
        with contextlib.suppress(OSError):
            directories.add(os.path.realpath(group.directory / variant))
        workspace = (group.runs.get(variant) or {}).get("workspace")
        if isinstance(workspace, str) and workspace:
            directories.add(str(Path(workspace).parent))
        for directory in directories:
            prefixes[f"{directory}/workspace"] = "{{workspace}}"
            prefixes[directory] = "{{run}}"
    ordered = sorted(prefixes, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(p) for p in ordered)) if ordered else None

    def scrub(text: str) -> str:
        return pattern.sub(lambda m: prefixes[m.group(0)], text) if pattern else text

    return scrub


def _scrub_value(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, list):
        return [_scrub_value(v, scrub) for v in value]
    if isinstance(value, dict):
        return {str(k): _scrub_value(v, scrub) for k, v in value.items()}
    return value


def run_evidence(run: Mapping[str, Any], scrub: Callable[[str], str]) -> list[str]:
    """The lines shown for one run: responses, tool calls, changed files. Nothing else."""
    turns = [t for t in run.get("turns") or [] if isinstance(t, Mapping)]
    if not turns:
        turns = [
            {"turn": 1, "response": run.get("response"), "toolActivity": run.get("toolActivity")}
        ]
    lines: list[str] = []
    for position, turn in enumerate(turns, start=1):
        number = turn.get("turn") if isinstance(turn.get("turn"), int) else position
        lines.append(f"Turn {number} response:")
        lines.append(truncate(scrub(str(turn.get("response") or "")), RESPONSE_LIMIT))
        for call in turn.get("toolActivity") or []:
            if not isinstance(call, Mapping):
                continue
            args = json.dumps(
                _scrub_value(call.get("args"), scrub), ensure_ascii=False, separators=(",", ":")
            )
            lines.append(
                f"- tool {scrub(str(call.get('toolName')))} {tool_outcome(call)}: "
                f"{truncate(args, ARGUMENT_LIMIT)}"
            )
    changes = mapping(run.get("effects")).get("changes")
    if isinstance(changes, Mapping):
        for key in ("created", "modified", "deleted"):
            paths = [scrub(str(p)) for p in changes.get(key) or []]
            lines.append(f"Files {key}: {', '.join(paths) or 'none'}")
    return lines


def compose_prompt(group: GroupEvidence, labels: Mapping[str, str]) -> str:
    """The reviewer prompt (reference §9.3): task, questions, and runs A and B, anonymous."""
    first_run = group.runs.get("baseline") or group.runs.get("candidate")
    turns = declared_turns(group.definition, first_run)
    questions = [str(q) for q in group.definition.get("review_questions") or []]
    scrub = path_scrubber(group)
    lines = [
        "You are reviewing two anonymous runs, A and B, of the same task.",
        "Judge only the evidence below, and answer every question for both runs with "
        "yes, no or unclear.",
        "",
        "Task turns:",
        *(f"{number}. {text}" for number, text in enumerate(turns, start=1)),
        "",
        "Questions:",
        *(f"{number}. {text}" for number, text in enumerate(questions, start=1)),
    ]
    for label in LABELS:
        lines += ["", f"## Run {label}", *run_evidence(group.runs[labels[label]] or {}, scrub)]
    lines += [
        "",
        "Reply with only JSON of the form "
        '{"answers":[{"question":1,"A":"yes|no|unclear","B":"yes|no|unclear",'
        '"rationale":"one sentence"}]}',
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The reply


def strip_fences(text: str) -> str:
    """Trim, then strip one leading ``` or ```json fence and one trailing fence."""
    text = _FENCE_OPEN.sub("", text.strip(), count=1)
    return _FENCE_CLOSE.sub("", text, count=1).strip()


def parse_reply(text: str, count: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The answers by question number (`{question, A, B, rationale}`), or the errors."""
    try:
        data = json.loads(strip_fences(text))
    except ValueError:
        return [], ["reviewer response is not JSON"]
    answers = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(answers, list) or len(answers) != count:
        return [], [f"reviewer must answer exactly {counted(count, 'question')}"]
    found: list[dict[str, Any]] = []
    errors: list[str] = []
    for number in range(1, count + 1):
        entry = next(
            (
                a
                for a in answers
                if isinstance(a, dict)
                and not isinstance(a.get("question"), bool)
                and a.get("question") == number
            ),
            None,
        )
        if (
            entry is None
            or entry.get("A") not in VERDICTS
            or entry.get("B") not in VERDICTS
            or not isinstance(entry.get("rationale"), str)
        ):
            errors.append(f"reviewer answer for question {number} is missing or invalid")
            continue
        found.append(entry)
    return ([], errors) if errors else (found, [])


def map_answers(
    answers: Sequence[Mapping[str, Any]], questions: Sequence[str], labels: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Labelled answers turned back into `{question, baseline, candidate, rationale}`."""
    mapped = []
    for number, answer in enumerate(answers, start=1):
        by_variant = {labels[label]: answer[label] for label in LABELS}
        mapped.append(
            {
                "question": questions[number - 1],
                "baseline": by_variant["baseline"],
                "candidate": by_variant["candidate"],
                "rationale": answer["rationale"],
            }
        )
    return mapped
