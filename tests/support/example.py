"""What the shipped example suite's scripts give on Pi: each group's check states and its
comparisons' transitions (a host that cannot observe a check gives `unavailable` instead)."""

from __future__ import annotations

from pytest_skill_eval.hosts.registry import registration_for

Outcome = tuple[dict[str, str], dict[str, str]]

OUTCOMES: dict[str, Outcome] = {
    "natural-activation": (
        {"baseline-reads-skill": "fail", "candidate-reads-skill": "pass"},
        {"skill-read-on-first-turn": "fail-to-pass"},
    ),
    "changelog-entry": (
        {
            "baseline-entry": "fail",
            "candidate-entry": "pass",
            "baseline-only-changelog": "pass",
            "candidate-only-changelog": "pass",
            "candidate-read-first": "pass",
            "candidate-reply": "pass",
        },
        {"entry-in-fixed": "fail-to-pass", "only-changelog": "pass-to-pass"},
    ),
}

# The example's checks that are a `tool-call` on a neutral tool: unavailable where the host
# cannot observe that tool (its registration's `unobservable`).
TOOL_CALL_CHECKS = {"candidate-read-first": "read"}


def outcomes_on(host: str) -> dict[str, Outcome]:
    """Pi's outcomes of the example, with a check on a tool `host` cannot observe unavailable."""
    unobservable = registration_for(host).unobservable
    unavailable = {c: "unavailable" for c, t in TOOL_CALL_CHECKS.items() if t in unobservable}
    return {
        group: ({k: unavailable.get(k, v) for k, v in checks.items()}, transitions)
        for group, (checks, transitions) in OUTCOMES.items()
    }
