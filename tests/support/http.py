"""HTTP on 127.0.0.1 for the model server's tests: a fake upstream provider for recording tests
(scripted answers, kept requests), and the posts a subject would send."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytest_skill_eval.modelserver.record import RecordingRoute
from pytest_skill_eval.modelserver.server import QuietHandler, ScriptedModelServer
from pytest_skill_eval.modelserver.wire import OPENAI

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
        __tracebackhide__ = True
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
        __tracebackhide__ = True
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        """Stop serving and release the port (later connections are refused)."""
        __tracebackhide__ = True
        if self._stopped:
            return
        self._stopped = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def _next(self, request: UpstreamRequest) -> Answer:
        __tracebackhide__ = True
        with self._lock:
            self.requests.append(request)
            if not self.answers:
                return 500, "application/json", [b'{"error": {"message": "fake exhausted"}}']
            answer = self.answers.pop(0)
        return answer(request) if callable(answer) else answer


def _handler(upstream: FakeUpstream) -> type[BaseHTTPRequestHandler]:
    __tracebackhide__ = True

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            """Answer the next scripted answer."""
            __tracebackhide__ = True
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


def responses_sse(
    *, text: str | None = None, call: tuple[str, str, str] | None = None, model: str = "gpt-5.5"
) -> bytes:
    """A Responses API answer as OpenAI streams it: a message, or one `(name, arguments JSON,
    call_id)` function call, with deltas, the done item and `response.completed` with usage."""
    __tracebackhide__ = True
    head = {"id": "resp_up_1", "object": "response", "created_at": 1796110712, "model": model}
    item: dict[str, Any]
    frames: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**head, "status": "in_progress", "output": []}}
    ]
    if call is not None:
        name, arguments, call_id = call
        item = {"type": "function_call", "id": "fc_up_1", "name": name, "call_id": call_id}
        frames.append(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "arguments": ""},
            }
        )
        frames += [
            {
                "type": "response.function_call_arguments.delta",
                "output_index": 0,
                "item_id": "fc_up_1",
                "delta": arguments[i : i + 7],
            }
            for i in range(0, len(arguments), 7)
        ]
        item = {**item, "status": "completed", "arguments": arguments}
    else:
        words = (text or "").split(" ")
        item = {"type": "message", "id": "msg_up_1", "role": "assistant", "content": []}
        frames.append({"type": "response.output_item.added", "output_index": 0, "item": item})
        frames += [
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "item_id": "msg_up_1",
                "content_index": 0,
                "delta": word if i == 0 else " " + word,
            }
            for i, word in enumerate(words)
        ]
        part = {"type": "output_text", "text": text or "", "annotations": []}
        item = {**item, "status": "completed", "content": [part]}
    frames.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    usage = {
        "input_tokens": 1500,
        "input_tokens_details": {"cached_tokens": 1024},
        "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 1540,
    }
    final = {**head, "status": "completed", "output": [item], "usage": usage}
    frames.append({"type": "response.completed", "response": final})
    return b"".join(
        f"event: {f['type']}\ndata: {json.dumps({**f, 'sequence_number': n})}\n\n".encode()
        for n, f in enumerate(frames)
    )


@dataclass(frozen=True)
class Reply:
    """What the server answered one post."""

    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def post_reply(
    url: str, body: Any, *, headers: dict[str, str] | None = None, raw: bytes | None = None
) -> Reply:
    """POST `body` as JSON (or the bytes `raw`) to `url`; an HTTP error is a reply too."""
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        headers={"Content-Type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return Reply(response.status, response.headers["Content-Type"], response.read())
    except urllib.error.HTTPError as error:
        with error:
            return Reply(error.code, error.headers["Content-Type"], error.read())


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """POST `body` as JSON to `url`: the status and the body of the answer."""
    reply = post_reply(url, body, headers=headers)
    return reply.status, reply.body


def openai_url(server: ScriptedModelServer, token: str) -> str:
    """Route `token`'s OpenAI chat-completions endpoint on `server`."""
    return f"{server.base_url}/r/{token}/v1/chat/completions"


def anthropic_url(server: ScriptedModelServer, token: str) -> str:
    """Route `token`'s Anthropic messages endpoint on `server`."""
    return f"{server.base_url}/r/{token}/v1/messages"


def recording_route(
    server: ScriptedModelServer,
    upstream: FakeUpstream,
    cassette: Path,
    *,
    api: str = OPENAI,
    mode: str = "all",
    **options: Any,
) -> RecordingRoute:
    """A route on `server` relaying `api` to `upstream` (its `/v1`) and recording `cassette`."""
    return RecordingRoute.open(
        server,
        api=api,
        upstream_base_url=f"{upstream.base_url}/v1",
        cassette_path=cassette,
        mode=mode,
        **options,
    )
