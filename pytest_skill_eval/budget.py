"""The spend ledger: one protocol, two implementations.

`FileLedger` is one file under a lock, shared by every worker and trial of an invocation on one
machine (the default). `ServiceLedger` talks to `skill-eval ledger serve` over HTTP, so shards on
several machines share one ceiling. A ledger that cannot be used raises `LedgerError`, an
`OSError`, which a group records as an infrastructure failure of the subject that asked.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .evidence.store import atomic_write

TOKEN_ENV = "SKILL_EVAL_LEDGER_TOKEN"
# Every request to a ledger service is bounded: a hung service fails a subject, never the run.
TIMEOUT_S = 10.0


class LedgerError(OSError):
    """The ledger cannot be used: a service unreachable, refusing, or answering nonsense."""


class Ledger(Protocol):
    """Spend against a ceiling, asked before each subject starts and charged after it ends."""

    def exhausted(self) -> bool:
        """Asked right before a subject starts: may it not? (A service reserves room for it.)"""

    def charge(self, amount: float) -> None:
        """Add a finished subject's spend; the ledger is exhausted once it reaches the ceiling."""

    def snapshot(self) -> dict[str, Any]:
        """`{maxCost, spent, exhausted}` for summaries, aggregates and shard records."""

    def handover(self) -> dict[str, Any]:
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

    def handover(self) -> dict[str, Any]:
        """The file and ceiling (workers share the controller's filesystem)."""
        return {"kind": "file", "path": str(self.path), "maxCost": self.max_cost}

    def close(self) -> None:
        """Nothing is held between calls."""


@dataclass(slots=True)
class ServiceLedger:
    """The ledger service at `url`; the shared token comes from SKILL_EVAL_LEDGER_TOKEN.

    `exhausted()` asks the service to admit one subject of this process (`client`): it holds room
    for that subject's estimated cost until `charge` settles it, so concurrent shards cannot all
    start on the last dollar. The last state the service sent stands in for `snapshot()` when
    the service can no longer be reached (the subjects it failed say so themselves).
    """

    url: str
    token: str | None = None
    client: str = field(default_factory=lambda: secrets.token_hex(8))
    last: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        if self.token is None:
            self.token = os.environ.get(TOKEN_ENV) or None

    def exhausted(self) -> bool:
        """Ask the service to admit one subject; refused when the ceiling leaves no room."""
        return not bool(self._call("admit", {"client": self.client}).get("admitted"))

    def charge(self, amount: float) -> None:
        """Settle this process's admitted subject with what it spent."""
        self._call("charge", {"client": self.client, "amount": amount})

    def snapshot(self) -> dict[str, Any]:
        """The service's `{maxCost, spent, exhausted}` (the last one it sent, if unreachable)."""
        with suppress(LedgerError):
            self._call("state", None)
        return {
            "maxCost": float(self.last.get("maxCost", 0.0)),
            "spent": round(float(self.last.get("spent", 0.0)), 10),
            "exhausted": bool(self.last.get("exhausted")),
        }

    def handover(self) -> dict[str, Any]:
        """The URL only: each worker reads the token from its own environment."""
        return {"kind": "service", "url": self.url}

    def close(self) -> None:
        """Release a reservation this process never settled (best effort)."""
        with suppress(LedgerError):
            self._call("release", {"client": self.client})

    def _call(self, action: str, body: Mapping[str, Any] | None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(f"{self.url}/{action}", data=data)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                answer = json.loads(response.read(1 << 16))
        except urllib.error.HTTPError as error:
            if error.code == 401:
                told = "a wrong token" if self.token else f"no token ({TOKEN_ENV} is not set)"
                raise LedgerError(
                    f"the ledger service at {self.url} refused this run: {told}"
                ) from None
            raise LedgerError(
                f"the ledger service at {self.url} answered HTTP {error.code} to {action}"
            ) from None
        except (OSError, ValueError) as error:
            reason = getattr(error, "reason", None) or error
            raise LedgerError(
                f"the ledger service at {self.url} cannot be reached ({reason}); no subject "
                "starts without it"
            ) from None
        if not isinstance(answer, dict) or not isinstance(answer.get("state"), dict):
            raise LedgerError(f"the ledger service at {self.url} sent no ledger state")
        self.last = dict(answer["state"])
        return answer


def ledger_from(handed: Mapping[str, Any]) -> Ledger:
    """The ledger a controller handed to an xdist worker (`Ledger.handover`)."""
    if handed.get("kind") == "service":
        return ServiceLedger(str(handed["url"]))
    return FileLedger(Path(handed["path"]), float(handed["maxCost"]))
