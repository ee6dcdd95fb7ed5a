"""Fixtures for the model server tests: a shared server, a real-Pi launcher, fake providers."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pytest_skill_eval.hosts.pi.config import write_pi_agent_dir
from pytest_skill_eval.modelserver.script import Script
from pytest_skill_eval.modelserver.server import Route, ScriptedModelServer

PI = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "pi"


@pytest.fixture(scope="session")
def model_server() -> Iterator[ScriptedModelServer]:
    """One scripted model server for the whole session, as a pytest worker would use it."""
    with ScriptedModelServer() as server:
        yield server


@dataclass
class PiRun:
    """What one real Pi run produced."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    route: Route
    workspace: Path

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        """Events of one type, in order."""
        return [e for e in self.events if e.get("type") == kind]

    def assistant_messages(self) -> list[dict[str, Any]]:
        """The assistant messages from `message_end` events."""
        return [
            e["message"] for e in self.of_type("message_end") if e["message"]["role"] == "assistant"
        ]


RunPi = Callable[..., PiRun]


def launch_pi(
    route: Route,
    prompt: str,
    *,
    api: str,
    provider: str,
    model_id: str,
    workspace: Path,
    home: Path,
    agent: Path,
    cost: Mapping[str, float] | None = None,
) -> PiRun:
    """Run the real Pi once in --mode json in `workspace`, talking to `route`."""
    home.mkdir(parents=True, exist_ok=True)
    write_pi_agent_dir(agent, route, api=api, provider=provider, model_id=model_id, cost=cost)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(agent),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }
    argv = [
        str(PI),
        "--mode",
        "json",
        "--no-session",
        "--no-extensions",
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
        "--no-context-files",
        "--tools",
        "read",
        "--model",
        f"{provider}/{model_id}",
        prompt,
    ]
    try:
        done = subprocess.run(
            argv,
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        route.close()
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return PiRun(done.returncode, events, done.stderr, route, workspace)


LaunchPi = Callable[..., PiRun]


@pytest.fixture
def pi_launcher() -> LaunchPi:
    """`launch_pi` for tests that open their own routes (skipped when Pi is not installed)."""
    if not PI.exists():
        pytest.skip(f"Pi is not installed at {PI}; run `npm ci` in the project root")
    return launch_pi


@pytest.fixture
def run_pi(model_server: ScriptedModelServer, tmp_path: Path) -> RunPi:
    """Run the real Pi once in --mode json against a fresh route of the shared server."""
    if not PI.exists():
        pytest.skip(f"Pi is not installed at {PI}; run `npm ci` in the project root")

    def run(
        script: Script,
        prompt: str,
        *,
        api: str,
        provider: str,
        model_id: str,
        cost: Mapping[str, float] | None = None,
        files: Mapping[str, str] | None = None,
    ) -> PiRun:
        workspace = tmp_path / "work"
        workspace.mkdir()
        for name, text in (files or {}).items():
            (workspace / name).write_text(text, encoding="utf-8")
        route = model_server.open_route(
            script, source=script.source, placeholders={"workspace": str(workspace)}
        )
        return launch_pi(
            route,
            prompt,
            api=api,
            provider=provider,
            model_id=model_id,
            workspace=workspace,
            home=tmp_path / "home",
            agent=tmp_path / "agent",
            cost=cost,
        )

    return run


# --- A fake provider for recording tests ---------------------------------------------------

# What the fake provider answers: HTTP status, content type and the body pieces it streams.
# A callable gets the request (so an answer can depend on what Pi sent) and returns that.
Answer = tuple[int, str, list[bytes]]
Scripted = Answer | Callable[["UpstreamRequest"], Answer]


@dataclass(frozen=True)
class UpstreamRequest:
    """One request the fake provider received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeUpstream:
    """A tiny threaded HTTP server on 127.0.0.1 that answers like a real provider.

    Answers are consumed in order and streamed with chunked transfer encoding, one piece per
    chunk; every request (path, lower-cased headers, JSON body) is kept in `requests`.
    `gate` (when set) is waited on after the first piece, to prove the relay streams.
    """

    def __init__(self, answers: list[Scripted]) -> None:
        self.answers = list(answers)
        self.requests: list[UpstreamRequest] = []
        self.gate: threading.Event | None = None
        self.gate_opened: bool | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT` (append `/v1` for an OpenAI-style baseUrl)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        """Stop serving and release the port (later connections are refused)."""
        if self._stopped:
            return
        self._stopped = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def _next(self, request: UpstreamRequest) -> Answer:
        with self._lock:
            self.requests.append(request)
            if not self.answers:
                return 500, "application/json", [b'{"error": {"message": "fake exhausted"}}']
            answer = self.answers.pop(0)
        return answer(request) if callable(answer) else answer


def _handler(upstream: FakeUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_POST(self) -> None:
            """Answer the next scripted answer."""
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = UpstreamRequest(urlsplit(self.path).path, headers, json.loads(raw))
            status, content_type, pieces = upstream._next(request)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            for number, piece in enumerate(pieces):
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
                if number == 0 and upstream.gate is not None:
                    upstream.gate_opened = upstream.gate.wait(timeout=30)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


@pytest.fixture
def fake_upstream() -> Iterator[Callable[[list[Scripted]], FakeUpstream]]:
    """Start fake providers with scripted answers; all are stopped after the test."""
    started: list[FakeUpstream] = []

    def start(answers: list[Scripted]) -> FakeUpstream:
        upstream = FakeUpstream(answers)
        started.append(upstream)
        return upstream

    yield start
    for upstream in started:
        with contextlib.suppress(OSError):
            upstream.stop()
