"""Recording through an HTTP proxy named by HTTP_PROXY (NO_PROXY empty), on loopback."""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pytest_skill_eval.modelserver.script import ScriptedResponse
from pytest_skill_eval.modelserver.server import QuietHandler
from pytest_skill_eval.modelserver.wire import OPENAI, render_stream
from tests.support.files import read_json
from tests.support.http import FakeUpstream, UpstreamRequest
from tests.support.roots import body_group, make_root
from tests.support.runs import results, skill_eval_args

pytestmark = pytest.mark.pi

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


class ForwardProxy:
    """A CONNECT-less HTTP forward proxy on 127.0.0.1 that keeps the absolute URLs it got."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _proxy_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


def _proxy_handler(proxy: ForwardProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            """Forward the request to the absolute URL it names; answer with the whole body."""
            proxy.seen.append(self.path)
            target = urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() != "proxy-connection"}
            upstream = http.client.HTTPConnection(target.hostname or "", target.port, timeout=30)
            try:
                upstream.request("POST", target.path, body=raw, headers=headers)
                answer = upstream.getresponse()
                body = answer.read()
            finally:
                upstream.close()
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.getheader("Content-Type") or "")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

    return Handler


def _done(request: UpstreamRequest) -> tuple[int, str, list[bytes]]:
    reply = render_stream(OPENAI, ScriptedResponse(text="done"), model="gpt-4.1", request_index=0)
    return 200, "text/event-stream", list(reply.chunks)


def test_recording_goes_through_the_proxy_the_environment_names(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_root(
        tmp_path / "root",
        [body_group("proxied", model={"model": "openai/gpt-4.1"}, expectations=[])],
        {},
    )
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    upstream = FakeUpstream([_done, _done])
    proxy = ForwardProxy()
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    # Both spellings: the lower-case one wins when both are set, and loopback is not exempt.
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, proxy.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    try:
        result = pytester.runpytest_subprocess(
            *skill_eval_args(root, cassettes=False),
            *("--skill-eval-cassettes", str(cassettes)),
            *("--skill-eval-record", "once"),
            *("-o", f"skill_eval_upstream_url={upstream.base_url}/v1"),
        )
    finally:
        proxy.stop()
        upstream.stop()
    assert proxy.seen == [f"{upstream.base_url}/v1/chat/completions"] * 2
    assert len(upstream.requests) == 2
    result_dir = results(root)[-1]
    for variant in ("baseline", "candidate"):
        run = read_json(result_dir / "groups" / "proxied" / variant / "run.json")
        assert run["provider"]["mode"] == "record"
        assert run["state"] == "complete", run["error"]
        assert "text: done" in (cassettes / "proxied" / f"{variant}.yaml").read_text()
    assert result.ret == 0, result.stdout.str()
