"""The spend ledger: one protocol, two implementations.

`FileLedger` is one file under a lock, shared by every worker and trial of an invocation on one
machine (the default). `scale.ledger.RedisLedger` keeps the ledger in Redis, so shards on several
machines share one ceiling. A ledger that cannot be used raises `LedgerError`, an `OSError`,
which a group records as an infrastructure failure of the subject that asked.
"""

from __future__ import annotations

import fcntl
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, Protocol, TypedDict

from ..evidence.records import Budget
from ..evidence.store import atomic_write


class LedgerError(OSError):
    """The ledger cannot be used: its store unreachable, refusing, or answering nonsense."""


def amount_of(value: object) -> float | None:
    """`value` as an amount of USD: a finite number zero or more, else None (`nan`, `inf`,
    `-1`, text, nothing): such an amount is never added or compared, it stops admissions."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | bytes):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


class Handover(TypedDict):
    """Where an xdist worker finds the controller's ledger: its kind, the file (`file`) or
    the Redis URL without the password, key and reserve (`redis`), and the ceiling."""

    kind: str
    maxCost: float
    path: NotRequired[str]
    url: NotRequired[str]
    key: NotRequired[str]
    reserve: NotRequired[float | None]


class Ledger(Protocol):
    """Spend against a ceiling, asked before each subject starts and charged after it ends."""

    def exhausted(self) -> bool:
        """Asked right before a subject starts: may it not? (Redis holds room for it.)"""

    def charge(self, amount: float) -> None:
        """Add a finished subject's spend; the ledger is exhausted once it reaches the ceiling."""

    def snapshot(self) -> Budget:
        """`{maxCost, spent, exhausted}` for summaries, aggregates and shard records."""

    def handover(self) -> Handover:
        """What an xdist worker needs to open the same ledger (`ledger_from`); no secrets."""

    def close(self) -> None:
        """This process starts no more subjects: give back what it holds."""


@dataclass(frozen=True, slots=True)
class FileLedger:
    """Spend in one file; `path` holds `{"maxCost", "spent", "exhausted", "charges"}`."""

    path: Path
    max_cost: float

    @classmethod
    def create(cls, path: Path, max_cost: float) -> FileLedger:
        """Start an empty ledger (the controller does this once per invocation)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        ledger = cls(path, max_cost)
        with ledger._locked() as state:
            state.update({"maxCost": max_cost, "spent": 0.0, "exhausted": False, "charges": 0})
        return ledger

    @contextmanager
    def _locked(self) -> Iterator[dict[str, object]]:
        with open(self.path.with_suffix(".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state: dict[str, object] = {}
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
        """Add a finished subject's spend; mark the ledger exhausted at the ceiling. A spend
        that is not a finite amount zero or more exhausts it: no sum could be trusted."""
        with self._locked() as state:
            spent = amount_of(state.get("spent", 0.0))
            total: float | None = None
            if amount_of(amount) is None or spent is None:
                state["exhausted"] = True
                refused = f"was charged {amount!r} USD on {state.get('spent')!r} spent"
            else:
                refused = ""
                total = state["spent"] = round(spent + amount, 10)
            charges = state.get("charges", 0)
            state["charges"] = int(charges if isinstance(charges, int | float | str) else 0) + 1
            if total is not None and total >= self.max_cost:
                state["exhausted"] = True
        if refused:
            raise LedgerError(
                f"the spend ledger {self.path} {refused}, not finite amounts zero or more; it "
                "is marked exhausted, no further subject starts"
            )

    def snapshot(self) -> Budget:
        """`{maxCost, spent, exhausted}` for summaries and aggregates."""
        with self._locked() as state:
            spent = state.get("spent", 0.0)
            return {
                "maxCost": self.max_cost,
                "spent": round(float(spent if isinstance(spent, int | float | str) else 0.0), 10),
                "exhausted": bool(state.get("exhausted")),
            }

    def handover(self) -> Handover:
        """The file and ceiling (workers share the controller's filesystem)."""
        return {"kind": "file", "path": str(self.path), "maxCost": self.max_cost}

    def close(self) -> None:
        """Nothing is held between calls."""
