"""Bytecode caching for every Python the tests and benchmarks start."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def cache_bytecode_outside_the_tree() -> None:
    """Let every Python started from here on reuse compiled and assertion-rewritten modules.

    The tests start well over a hundred nested pytest sessions (and their xdist workers), and
    the benchmarks time whole sessions. Under PYTHONDONTWRITEBYTECODE each one compiled the
    package, pytest and hypothesis from source and rewrote the asserts of every plugin module
    again: about half of a short session's CPU, and 1.6 s per xdist worker, none of which an
    ordinary Python pays. Bytecode goes to a cache directory outside the source tree
    (PYTHONPYCACHEPREFIX, which pytest's assertion rewriter honours too), so no `__pycache__`
    appears anywhere; a prefix the caller chose is kept.
    """
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return  # bytecode is cached as Python always caches it
    default = Path(tempfile.gettempdir()) / f"pytest-skill-eval-pycache-{os.getuid()}"
    prefix = os.environ.setdefault("PYTHONPYCACHEPREFIX", str(default))
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False
