"""The spend ledger: one file under a lock, shared by every worker and trial of an invocation."""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .evidence.store import atomic_write


@dataclass(frozen=True, slots=True)
class Ledger:
    """Spend against a ceiling; `path` holds `{"maxCost", "spent", "exhausted", "charges"}`."""

    path: Path
    max_cost: float

    @classmethod
    def create(cls, path: Path, max_cost: float) -> Ledger:
        """Start an empty ledger (the controller does this once per invocation)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        ledger = cls(path, max_cost)
        with ledger._locked() as state:
            state.update({"maxCost": max_cost, "spent": 0.0, "exhausted": False, "charges": 0})
        return ledger

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        with open(self.path.with_suffix(".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state: dict[str, Any] = {}
                if self.path.is_file() and self.path.stat().st_size:
                    state = json.loads(self.path.read_text(encoding="utf-8"))
                before = dict(state)
                yield state
                if state != before:
                    # The ledger is bookkeeping, not evidence: replaced, never write-once.
                    atomic_write(self.path, json.dumps(state).encode("utf-8"))
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def exhausted(self) -> bool:
        """Checked before each subject starts: has spend reached the ceiling?"""
        with self._locked() as state:
            return bool(state.get("exhausted"))

    def charge(self, amount: float) -> None:
        """Add a finished subject's spend; mark the ledger exhausted at the ceiling."""
        with self._locked() as state:
            state["spent"] = round(float(state.get("spent", 0.0)) + amount, 10)
            state["charges"] = int(state.get("charges", 0)) + 1
            if state["spent"] >= self.max_cost:
                state["exhausted"] = True

    def snapshot(self) -> dict[str, Any]:
        """`{maxCost, spent, exhausted}` for summaries and aggregates."""
        with self._locked() as state:
            return {
                "maxCost": self.max_cost,
                "spent": round(float(state.get("spent", 0.0)), 10),
                "exhausted": bool(state.get("exhausted")),
            }
