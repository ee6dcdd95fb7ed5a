"""Test configuration for the project's own tests."""

from __future__ import annotations

collect_ignore_glob = ["example_suites/*", "bench/*", "node_modules/*"]
