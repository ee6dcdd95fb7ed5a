"""A loopback HTTP server answering the hosts' model requests from scripts, a route per subject."""

from __future__ import annotations

import re
import secrets
import selectors
import socket
import threading
import weakref
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from pytest_skill_eval.modelserver.paths import COUNT_PATHS, api_of
from pytest_skill_eval.modelserver.placeholders import Stamps
from pytest_skill_eval.modelserver.rendering import Renderer, as_written
from pytest_skill_eval.modelserver.route import Reply, Route, RouteFailure, StreamedReply
from pytest_skill_eval.modelserver.script import Script
from pytest_skill_eval.modelserver.wire import OPENAI, error_reply

_ROUTE_PATH = re.compile(r"^/r/([A-Za-z0-9_-]+)(/.*)?$")
_MAX_BODY = 64 * 1024 * 1024


class ScriptedModelServer:
    """Threaded stdlib HTTP server on 127.0.0.1 serving many routes at once."""

    def __init__(self) -> None:
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._routes: dict[str, Route] = {}
        # Closed routes stay reachable while their owner holds them, so late requests are seen.
        self._retired: weakref.WeakValueDictionary[str, Route] = weakref.WeakValueDictionary()
        self.stray_failures: list[RouteFailure] = []

    def __enter__(self) -> ScriptedModelServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Bind a free loopback port and serve in a daemon thread."""
        if self._httpd is not None:
            return
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_until_stopped,
            name="skill-eval-model-server",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the port."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.stop_serving()
        httpd.server_close()
        if thread is not None:
            thread.join()

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT` of the running server."""
        if self._httpd is None:
            raise RuntimeError("ScriptedModelServer is not running; use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def open_route(
        self,
        script: Script | None,
        *,
        source: Path | None = None,
        placeholders: Mapping[str, str] | None = None,
        workspace: Path | None = None,
        render: Renderer = as_written,
        stamps: Stamps = (),
    ) -> Route:
        """Register a route answering from `script` (None: every request fails as missing).

        `workspace` is the subject's workspace, where files its script names are read from;
        `render` writes its neutral tool calls as the served host's; `stamps` are that host's
        per-run values in its requests (`normalise_request`).
        """
        token = secrets.token_urlsafe(16)
        route = Route(self, token, script, source, placeholders or {}, workspace, render, stamps)
        self.register(route)
        return route

    def register(self, route: Route) -> None:
        """Serve `route` (built for this server) under its token until it is closed."""
        with self._lock:
            self._routes[route.token] = route

    def _retire(self, route: Route) -> None:
        with self._lock:
            if self._routes.pop(route.token, None) is not None:
                self._retired[route.token] = route

    def _lookup(self, token: str) -> Route | None:
        with self._lock:
            return self._routes.get(token) or self._retired.get(token)

    def _stray(self, failure: RouteFailure) -> None:
        with self._lock:
            self.stray_failures.append(failure)


class _Server(ThreadingHTTPServer):
    """The serving loop sleeps until a connection or `stop_serving` wakes it; `serve_forever`
    would wake every poll interval for the whole session only to look for a stop."""

    daemon_threads = True
    timeout = 0.0  # `handle_request` after the loop saw a connection never waits for another
    owner: ScriptedModelServer

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._wake, self._waker = socket.socketpair()
        self._stopping = False
        self._stopped = threading.Event()

    def serve_until_stopped(self) -> None:
        """Accept and serve connections until `stop_serving`."""
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(self._wake, selectors.EVENT_READ)
                while not self._stopping:
                    if any(key.fileobj is self for key, _ in selector.select()):
                        self.handle_request()
                    self.service_actions()
        finally:
            self._stopped.set()

    def stop_serving(self) -> None:
        """Wake the serving loop and wait until it has ended."""
        self._stopping = True
        self._waker.send(b"\0")
        self._stopped.wait()

    def server_close(self) -> None:
        super().server_close()
        self._wake.close()
        self._waker.close()


class QuietHandler(BaseHTTPRequestHandler):
    """A loopback handler that logs nothing (requests are kept on the routes instead) and lets
    a client go mid-request (a host killed, or aborting its request): it has nothing left to be
    told, and the standard library would print a traceback to the session's stderr for it."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionError:
            self.close_connection = True


class _Handler(QuietHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        """Answer a model request."""
        self._serve(read_body=True)

    def do_GET(self) -> None:
        """Any GET is unsupported; still recorded as a failure."""
        self._serve(read_body=False)

    def _serve(self, *, read_body: bool) -> None:
        path = urlsplit(self.path).path
        raw = self._read_body() if read_body else b""
        if raw is None:
            self._send(error_reply(OPENAI, 400, "request body could not be read"))
            return
        match = _ROUTE_PATH.match(path)
        sub = (match.group(2) or "/") if match else path
        api = (api_of(sub) or COUNT_PATHS.get(sub)) if self.command == "POST" else None
        token = match.group(1) if match else None
        route = self.server.owner._lookup(token) if token else None
        if route is None:
            message = (
                f"unknown route: {path} does not belong to an open run "
                "(the token is unknown or the server was restarted)"
            )
            self.server.owner._stray(RouteFailure("unknown-route", message, None))
            self._send(error_reply(api or OPENAI, 500, message))
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        self._send(route._serve(api, sub, raw, headers))

    def _read_body(self) -> bytes | None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return None
        if length < 0 or length > _MAX_BODY:
            return None
        return self.rfile.read(length)

    def _read_chunked(self) -> bytes | None:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline()
            try:
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            except ValueError:
                return None
            if size == 0:
                # Trailer lines end with an empty line.
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            total += size
            if total > _MAX_BODY:
                return None
            parts.append(self.rfile.read(size))
            self.rfile.readline()

    def _send(self, reply: Reply) -> None:
        self.close_connection = True
        try:
            self.send_response(reply.status)
            for name, value in reply.headers:
                self.send_header(name, value)
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in reply.chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            # Pi aborted the request; nothing left to tell it.
            pass
        finally:
            if isinstance(reply, StreamedReply):
                reply.close()
