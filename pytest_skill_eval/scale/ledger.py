"""`skill-eval ledger serve`: one spend ceiling for shards on several machines.

A tiny HTTP service (stdlib `ThreadingHTTPServer`) holding the ledger state under one lock, so
every admission and charge is atomic. Before a subject starts its process asks to be admitted:
the service holds room for that subject's estimated cost (`--reserve`, else the dearest charge
seen so far) and refuses once spend plus what is held would pass the ceiling, so concurrent
shards cannot each start on the last dollar. A charge settles the hold with the real spend. The
ceiling holds exactly when no subject costs more than its estimate; a subject that does is still
charged in full, as on one machine. A process holds at most one reservation at a time.

Every request needs the shared token (`SKILL_EVAL_LEDGER_TOKEN`, compared in constant time);
the token is never written anywhere, and every connection is bounded by a timeout.
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..evidence.store import atomic_write

MAX_BODY = 1 << 16
TIMEOUT_S = 10.0


class LedgerState:
    """The service's state and its lock; written to `state_file` after every change."""

    def __init__(
        self, max_cost: float, reserve: float | None = None, state_file: Path | None = None
    ) -> None:
        self.lock = threading.Lock()
        self.reserve = reserve
        self.state_file = state_file
        self.state: dict[str, Any] = {
            "maxCost": max_cost,
            "spent": 0.0,
            "exhausted": False,
            "charges": 0,
            "dearest": 0.0,
            "holds": {},
        }
        if state_file is not None and state_file.is_file() and state_file.stat().st_size:
            # A restarted service continues the spend it recorded (holds died with it).
            saved = json.loads(state_file.read_text(encoding="utf-8"))
            self.state.update({k: saved[k] for k in ("spent", "exhausted", "charges", "dearest")})
            self.state["exhausted"] = self.state["exhausted"] or self.state["spent"] >= max_cost

    def public(self) -> dict[str, Any]:
        """What clients see: `{maxCost, spent, exhausted}`."""
        return {
            "maxCost": self.state["maxCost"],
            "spent": round(float(self.state["spent"]), 10),
            "exhausted": bool(self.state["exhausted"]),
        }

    def admit(self, client: str) -> bool:
        """Admit one subject of `client` (replacing any hold it had), or refuse it."""
        with self.lock:
            holds: dict[str, float] = self.state["holds"]
            holds.pop(client, None)
            if self.state["exhausted"]:
                return False
            estimate = self.reserve if self.reserve is not None else self.state["dearest"]
            if self.state["spent"] + sum(holds.values()) + estimate > self.state["maxCost"]:
                # No room for another subject: as final as reaching the ceiling.
                self.state["exhausted"] = True
                self._save()
                return False
            holds[client] = estimate
            return True

    def charge(self, client: str, amount: float) -> None:
        """Settle `client`'s hold with the spend of its subject."""
        with self.lock:
            self.state["holds"].pop(client, None)
            self.state["spent"] = round(float(self.state["spent"]) + amount, 10)
            self.state["charges"] += 1
            self.state["dearest"] = max(float(self.state["dearest"]), amount)
            if self.state["spent"] >= self.state["maxCost"]:
                self.state["exhausted"] = True
            self._save()

    def release(self, client: str) -> None:
        """Drop `client`'s hold: it starts no more subjects."""
        with self.lock:
            self.state["holds"].pop(client, None)

    def _save(self) -> None:
        if self.state_file is not None:
            saved = {k: v for k, v in self.state.items() if k != "holds"}
            atomic_write(self.state_file, json.dumps(saved).encode("utf-8"))


def make_server(host: str, port: int, ledger: LedgerState, token: str) -> ThreadingHTTPServer:
    """The service bound to `host:port` (port 0: any free port, see `server_address`)."""

    class Handler(BaseHTTPRequestHandler):
        timeout = TIMEOUT_S  # a client that stops sending cannot hold a thread

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: requests are bookkeeping, not news."""

        def do_GET(self) -> None:
            if self._authorised():
                if self.path == "/state":
                    self._answer(200, {"state": ledger.public()})
                else:
                    self._answer(404, {"error": f"no such endpoint: {self.path}"})

        def do_POST(self) -> None:
            if not self._authorised():
                return
            body = self._body()
            if body is None:
                return
            client = str(body.get("client", ""))
            if not client:
                self._answer(400, {"error": "a client id is required"})
                return
            if self.path == "/admit":
                admitted = ledger.admit(client)
                self._answer(200, {"admitted": admitted, "state": ledger.public()})
            elif self.path == "/charge":
                try:
                    amount = float(body.get("amount", 0.0))
                except (TypeError, ValueError):
                    self._answer(400, {"error": "amount must be a number"})
                    return
                if not amount >= 0:
                    self._answer(400, {"error": "amount must not be negative"})
                    return
                ledger.charge(client, amount)
                self._answer(200, {"state": ledger.public()})
            elif self.path == "/release":
                ledger.release(client)
                self._answer(200, {"state": ledger.public()})
            else:
                self._answer(404, {"error": f"no such endpoint: {self.path}"})

        def _authorised(self) -> bool:
            given = self.headers.get("Authorization", "")
            if hmac.compare_digest(given.encode("utf-8"), f"Bearer {token}".encode()):
                return True
            self._answer(401, {"error": "wrong or missing token"})
            return False

        def _body(self) -> Mapping[str, Any] | None:
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY:
                self._answer(400, {"error": "a JSON body of at most 64 KiB is required"})
                return None
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = None
            if not isinstance(body, dict):
                self._answer(400, {"error": "the body must be a JSON object"})
                return None
            return body

        def _answer(self, status: int, body: Mapping[str, Any]) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
