"""Deterministic grading: the nine expectation kinds and baseline→candidate comparisons."""

from __future__ import annotations

from pytest_skill_eval.grading.comparisons import transition
from pytest_skill_eval.grading.core import grade_group, grade_state

__all__ = ["grade_group", "grade_state", "transition"]
