"""Run, group, batch and aggregate states and the rules that combine them (reference §6)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

RUN_STATES = ("complete", "cancelled", "infrastructure-failed", "invalid", "not-selected")
FAILING_RUN_STATES = frozenset({"invalid", "infrastructure-failed", "cancelled"})
GROUP_STATES = ("complete", "partially-complete", "invalid", "cancelled")
BATCH_STATES = ("complete", "partially-complete", "cancelled")
# Provider modes whose cost is priced like a real model but never paid: shown as simulated.
SIMULATED_MODES = ("scripted", "replay")


def run_failed(state: str) -> bool:
    """Whether a run state is an infrastructure outcome (not ordinary evidence)."""
    return state in FAILING_RUN_STATES


def group_state(
    runs: Mapping[str, str], selected: Mapping[str, bool], grade_state: str, resource_error: bool
) -> str:
    """Reference §6.2: only selected runs count; a shared resource error forces `invalid`."""
    states = [runs[v] for v in ("baseline", "candidate") if selected.get(v)]
    if any(s == "cancelled" for s in states):
        return "cancelled"
    if resource_error:
        return "invalid"
    if all(s == "complete" for s in states) and grade_state != "grade-error":
        return "complete"
    return "partially-complete"


def unrecorded_group_state(state: str) -> str:
    """A group whose record could not be written is never `complete`: its record is a fallback."""
    return "partially-complete" if state == "complete" else state


def batch_state(group_states: Iterable[str]) -> str:
    """Reference §6.3: cancelled beats everything, complete needs every group complete."""
    states = list(group_states)
    if any(s == "cancelled" for s in states):
        return "cancelled"
    if all(s == "complete" for s in states):
        return "complete"
    return "partially-complete"


def aggregate_state(trial_states: Iterable[str], requested: int) -> str:
    """Over trials: a missing or cancelled trial cancels, complete needs every trial complete."""
    states = list(trial_states)
    if len(states) < requested or "cancelled" in states:
        return "cancelled"
    if all(s == "complete" for s in states):
        return "complete"
    return "partially-complete"
