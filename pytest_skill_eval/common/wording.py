"""Counted nouns for every message and view: "1 check", "2 checks", never "1 checks" or "(s)"."""

from __future__ import annotations

# Nouns whose plural is not the singular with "s"; "(s)" is never printed.
_PLURALS = {"difference": "differences", "entry": "entries"}


def noun(count: int, singular: str) -> str:
    """`singular` as it reads after `count`: "1 check", "2 checks", "0 checks"."""
    if count == 1:
        return singular
    return _PLURALS.get(singular, singular + "s")


def counted(count: int, singular: str) -> str:
    """`count` and its noun: "1 trial", "3 trials"."""
    return f"{count} {noun(count, singular)}"
