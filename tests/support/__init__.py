"""Helpers every test package shares: definition roots, argument lists, runs and their evidence.

Each helper hides itself from tracebacks (`__tracebackhide__`), so a failure points at the test
that called it. `bench/` builds its suites with the same helpers.
"""
