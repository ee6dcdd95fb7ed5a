"""Test configuration for the project's own tests."""

from __future__ import annotations

from tests.support.bytecode import cache_bytecode_outside_the_tree

collect_ignore_glob = ["example_suites/*", "bench/*", "node_modules/*"]


cache_bytecode_outside_the_tree()
