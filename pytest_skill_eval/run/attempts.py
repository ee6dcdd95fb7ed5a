"""`--skill-eval-retries N`: a variant whose run was `infrastructure-failed` runs again.

Only that state is retried: a run that completed, whatever its checks say, is the evidence the
grade is about, and running it again until a check passes would manufacture a pass. Each earlier
attempt is kept whole (its run record, transcript, events, workspace) in
`<variant>/attempts/<n>/`, and the final run record lists them, so the group's manifest and the
result's seal cover every attempt.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import SkillEvalError
from ..evidence import layout
from ..evidence.records import AttemptRecord, RunRecord

RETRIED_STATE = "infrastructure-failed"


class RetriesError(SkillEvalError):
    """--skill-eval-retries is not a whole number of retries."""


def retries_value(raw: str | None) -> int:
    """The retries `--skill-eval-retries` asks for (0 when not given)."""
    if raw is None or str(raw).strip() == "":
        return 0
    text = str(raw).strip()
    if not text.isdigit():
        raise RetriesError(
            f"--skill-eval-retries expects how many times to run an infrastructure-failed "
            f"variant again (0 or more), not {raw!r}"
        )
    return int(text)


def retryable(run: Mapping[str, Any], earlier: int, retries: int, cancelled: bool) -> bool:
    """Whether a persisted run is run again: infrastructure-failed, retries left, not stopped.

    A run whose evidence could not be written (`persistence`) is not: the same disk refuses the
    next attempt too, and its evidence lies beside it, not in its directory alone.
    """
    error = run.get("error")
    kind = error.get("kind") if isinstance(error, Mapping) else None
    return (
        run.get("state") == RETRIED_STATE
        and kind != "persistence"
        and earlier < retries
        and not cancelled
    )


def set_aside(variant_dir: Path, attempt: int, run: RunRecord) -> AttemptRecord:
    """Move a finished attempt's whole directory to `<variant>/attempts/<attempt>/`.

    The variant directory is renamed away, made again with its `attempts/`, and the attempt
    renamed into it: no byte is rewritten, and the next attempt starts in an empty directory
    but for the attempts before it. Returns what the final run record says of this attempt.
    """
    staged = variant_dir.with_name(f".{variant_dir.name}.attempt-{attempt}")
    os.rename(variant_dir, staged)
    earlier = staged / layout.ATTEMPTS
    target = layout.attempt_dir(variant_dir, attempt)
    target.parent.mkdir(parents=True)
    if earlier.is_dir():
        # The attempts before this one move back up beside it.
        for entry in sorted(earlier.iterdir()):
            os.rename(entry, target.parent / entry.name)
        earlier.rmdir()
    os.rename(staged, target)
    error = run.get("error")
    return {
        "attempt": attempt,
        "state": str(run.get("state")),
        "error": error.copy() if isinstance(error, Mapping) else None,
        "evidence": target.relative_to(variant_dir).as_posix(),
    }


def record(earlier: Sequence[AttemptRecord]) -> list[AttemptRecord]:
    """The `attempts` field of the final run record: each earlier attempt, in order."""
    return [attempt.copy() for attempt in earlier]
