"""What the shipped example suite's scripts give on Pi: each group's check states and its
comparisons' transitions (a host that cannot observe a check gives `unavailable` instead)."""

from __future__ import annotations

OUTCOMES = {
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
