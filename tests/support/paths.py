"""Where the project, its example suite and the pinned Pi CLI live."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "example_suites" / "changelog"
PI = REPO / "node_modules" / ".bin" / "pi"
