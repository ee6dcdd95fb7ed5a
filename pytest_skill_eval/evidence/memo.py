"""What a view has read: each evidence file read from disk once while a view is shown.

`read_once` is for a view of finished results, which nothing rewrites while it is shown (the
terminal summary looks at each run record from eight places); `read_fresh` for what verifies
evidence and then relies on what it read, which must always read the disk. `read.py` consults
the memo in force; nothing else does.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

__all__ = ["READ_ONCE_LIMIT", "Memo", "memo_in_force", "read_fresh", "read_once"]

Shape = TypeAdapter[Any] | None  # what a remembered text was checked against (None: JSON)


class Memo:
    """The texts `read_once` has read, the most recent first kept, at most `limit` characters
    in all (a view of a suite of thousands of groups must not hold every record at once), and
    the shapes each was checked against."""

    def __init__(self, limit: int) -> None:
        self._texts: OrderedDict[Path, tuple[str, set[Shape]]] = OrderedDict()
        self._size = 0
        self._limit = limit

    def get(self, path: Path) -> tuple[str, set[Shape]] | None:
        seen = self._texts.get(path)
        if seen is not None:
            self._texts.move_to_end(path)
        return seen

    def keep(self, path: Path, text: str, shape: TypeAdapter[Any] | None) -> None:
        self._texts[path] = (text, {shape})
        self._size += len(text)
        while self._size > self._limit and len(self._texts) > 1:
            _, (dropped, _) = self._texts.popitem(last=False)
            self._size -= len(dropped)


_ONCE: ContextVar[Memo | None] = ContextVar("read_once", default=None)
READ_ONCE_LIMIT = 64 * 1024 * 1024  # characters of evidence text a view keeps at most


@contextmanager
def read_once() -> Iterator[None]:
    """Within it, each evidence file is read from disk, bounded and checked once (while it is
    among the most recent 64 Mi characters read).

    For a view of finished results, which nothing rewrites while it is shown: the terminal
    summary looks at each run record from eight places (states, cost, reuse, offered skills,
    ...), and read each one eight times over. Inside another `read_once` (the plugin shows the
    terminal summary, then the CI job summary, in one) it shares that memo: the second view
    reads nothing the first already read."""
    if _ONCE.get() is not None:
        yield
        return
    token = _ONCE.set(Memo(READ_ONCE_LIMIT))
    try:
        yield
    finally:
        _ONCE.reset(token)


@contextmanager
def read_fresh() -> Iterator[None]:
    """Within it, every read goes to disk, inside `read_once` too.

    For what verifies evidence and then relies on what it read (the gate pooling earlier
    results, `skill-eval verify`'s checks): a view may have read a file before it was verified,
    and that text must never stand in for the bytes the verification hashed."""
    token = _ONCE.set(None)
    try:
        yield
    finally:
        _ONCE.reset(token)


def memo_in_force() -> Memo | None:
    """The memo of the `read_once` around this call (None: read the disk)."""
    return _ONCE.get()
