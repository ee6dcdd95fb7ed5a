"""Why a subject run is not complete, in one sentence, and what says its credentials were missing.

Host-neutral: messages name the host by its display name, so every host's runs explain themselves.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..common.wording import counted
from ..evidence import layout
from .observation import Observation
from .process import ProcessOutcome

# Pi: "No API key found for …"; Claude Code: "Not logged in · Please run /login"; Codex and the
# providers: a 401 or 403, "Unauthorized", "invalid_api_key", "Missing bearer … authentication".
CREDENTIAL_HINTS = (
    "api key",
    "apikey",
    "api_key",
    "401",
    "403",
    "unauthorized",
    "authentication",
    "no model",
    "not logged in",
    "/login",
)


def run_state(
    outcome: ProcessOutcome,
    settled: bool,
    assistant_error: str | None,
    obs: Observation,
    late_errors: list[str],
) -> str:
    if outcome.termination_reason == "cancelled":
        return "cancelled"
    clean = (
        outcome.exit_code == 0
        and settled
        and assistant_error is None
        and not obs.parse_errors
        and not obs.protocol_errors
        and not late_errors
    )
    return "complete" if clean else "infrastructure-failed"


def why_incomplete(
    state: str,
    outcome: ProcessOutcome,
    settled: bool,
    assistant_error: str | None,
    obs: Observation,
    variant_dir: Path,
    host: str = "Pi",
) -> dict[str, str]:
    """One sentence saying why a run is not complete, so nobody has to read `process` for it.

    `host` is how the message names the host CLI (its `display_name`).
    """
    reason = outcome.termination_reason
    if state == "cancelled":
        return {"kind": "cancellation", "message": "Cancelled during subject execution"}
    stopped = {
        "no-progress-watchdog": f"the no-progress watchdog stopped {host} (no output for too long)",
        "protocol-error": f"the evaluator stopped {host} after a protocol error",
        "process-error": f"the evaluator stopped {host} after a failure talking to it",
    }
    causes: list[str] = []
    if reason in stopped:
        causes.append(stopped[reason])
    if outcome.signal is not None:
        causes.append(f"{host} was killed by {outcome.signal}")
    elif outcome.exit_code not in (0, None):
        causes.append(f"{host} exited with code {outcome.exit_code}")
    if obs.protocol_errors:
        first_problem = obs.protocol_errors[0]
        # Pi's own words: a failed RPC command carries them as `error`.
        detail = first_problem.get("message") or first_line(first_problem.get("error"))
        kind = first_problem.get("reason")
        causes.append(f"protocol error {kind}: {detail}" if detail else f"protocol error {kind}")
    if obs.parse_errors:
        first = obs.parse_errors[0]
        causes.append(
            f"{counted(len(obs.parse_errors), 'unreadable output record')} from {host} "
            f"(first: {first.get('reason')} at line {first.get('line')})"
        )
    if assistant_error is not None:
        causes.append(f"the model call failed: {assistant_error}")
    if not causes and not settled:
        causes.append(f"{host} ended before every turn settled")
    last = last_stderr_line(variant_dir / layout.STDERR)
    if last:
        causes.append(f"last line of stderr: {last}")
    message = "; ".join(causes) or f"the run ended {state}"
    return {"kind": "infrastructure", "message": message[0].upper() + message[1:]}


# A terminal's colour and style sequences (Codex's app-server colours its log lines).
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def last_stderr_line(path: Path, limit: int = 400) -> str:
    """The last non-blank line of the host's stderr, shortened to one readable line."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - 8192))
            tail = handle.read()
    except OSError:
        return ""
    text = ANSI.sub("", tail.decode("utf-8", "replace"))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def credential_refusal(assistant_error: str | None, obs: Observation, variant_dir: Path) -> str:
    """What says credentials were missing: the model error, a refused command or stderr (any
    line of it: a host may print its reason first and advice after it)."""
    refused = [first_line(p.get("error")) for p in obs.protocol_errors]
    for said in (assistant_error, *refused, *stderr_lines(variant_dir / layout.STDERR)):
        if said and looks_like_credentials(said):
            return said
    return ""


def stderr_lines(path: Path, limit: int = 400, head: int = 65536) -> list[str]:
    """The non-blank lines at the start of the host's stderr, each shortened to `limit`."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(head).decode("utf-8", "replace")
    except OSError:
        return []
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [line if len(line) <= limit else line[: limit - 1] + "…" for line in lines]


def first_line(said: Any) -> str:
    """The first non-blank line: a host may follow its reason with interactive advice."""
    lines = [line.strip() for line in str(said or "").splitlines() if line.strip()]
    return lines[0] if lines else ""


def looks_like_credentials(message: str) -> bool:
    lowered = message.lower()
    return any(hint in lowered for hint in CREDENTIAL_HINTS)
