"""The real provider behind a recording route: its URL, auth and forwarded headers, redaction."""

from __future__ import annotations

import base64
import http.client
import os
import ssl
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from pytest_skill_eval.errors import ModelProviderError
from pytest_skill_eval.modelserver.counting import COUNT_PATH, counted_tokens
from pytest_skill_eval.modelserver.gemini import GEMINI
from pytest_skill_eval.modelserver.wire import ANTHROPIC, OPENAI, OPENAI_RESPONSES, error_reply

RECORDABLE_APIS: tuple[str, ...] = (OPENAI, ANTHROPIC, OPENAI_RESPONSES, GEMINI)
# What each api appends to its provider's baseUrl, as the hosts' SDKs do (Gemini names the model
# in its path: its base URL is already the model's streaming URL, `gemini.stream_url`).
UPSTREAM_PATHS = {
    OPENAI: "/chat/completions",
    ANTHROPIC: "/v1/messages",
    OPENAI_RESPONSES: "/responses",
    GEMINI: "",
}
ANTHROPIC_VERSION = "2023-06-01"
REDACTED = "[redacted]"
# The host's own headers that describe the request rather than the caller; auth never passes
# through, nor do Codex's per-run session, thread and turn headers.
_FORWARDED = ("anthropic-version", "anthropic-beta", "openai-beta", "user-agent")
_MIN_SECRET = 6
# CA bundle variables, in the order that wins: OpenSSL's own, then the requests and curl ones.
CA_BUNDLE_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


class RecordError(ModelProviderError):
    """A recording that cannot be set up or written; names the setting or file and the fix."""


def check_recordable(api: str) -> None:
    """Raise `RecordError` unless traffic of `api` can be recorded."""
    if api not in RECORDABLE_APIS:
        raise RecordError(
            f"cannot record model traffic of api {api!r}: recording supports "
            f"{', '.join(RECORDABLE_APIS)}; declare a model whose provider uses one of them, "
            "or write the cassette by hand"
        )


def auth_headers(api: str, api_key: str) -> dict[str, str]:
    """The upstream auth headers a provider of `api` expects for `api_key`."""
    check_recordable(api)
    if api in (OPENAI, OPENAI_RESPONSES):
        return {"Authorization": f"Bearer {api_key}"}
    if api == GEMINI:
        return {"x-goog-api-key": api_key}
    return {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}


def upstream_url(upstream_base_url: str, api: str) -> str:
    """The provider URL a request of `api` is forwarded to (baseUrl + the api's path)."""
    check_recordable(api)
    parts = urlsplit(upstream_base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RecordError(
            f"upstream base URL {upstream_base_url!r} is not an http(s) URL; give the provider's "
            "baseUrl, e.g. https://api.anthropic.com or https://api.openai.com/v1"
        )
    url = parts._replace(path=parts.path.rstrip("/") + UPSTREAM_PATHS[api])
    return url.geturl()


def connect(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """An (unopened) connection for `url` and the request target on it, like curl would go.

    `HTTPS_PROXY`/`HTTP_PROXY` (either case) route through a proxy unless `NO_PROXY` names the
    host: https through a CONNECT tunnel, http by asking the proxy for the absolute URL. TLS
    verifies against `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE` or `CURL_CA_BUNDLE` when one is set,
    else the system store.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or ""
    if proxy and _bypassed(host, proxies.get("no", "")):
        proxy = ""
    proxy_parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    proxy_headers = _proxy_auth(proxy_parts) if proxy else {}
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        context = ssl_context()
        if proxy:
            connection = http.client.HTTPSConnection(
                proxy_parts.hostname or "", proxy_parts.port, timeout=timeout, context=context
            )
            connection.set_tunnel(host, parts.port, headers=proxy_headers)
        else:
            connection = http.client.HTTPSConnection(
                host, parts.port, timeout=timeout, context=context
            )
    elif proxy:
        connection = _ProxiedConnection(
            proxy_parts.hostname or "", proxy_parts.port, proxy_headers, timeout=timeout
        )
        target = url
    else:
        connection = http.client.HTTPConnection(host, parts.port, timeout=timeout)
    return connection, target


def ssl_context() -> ssl.SSLContext:
    """Verifying TLS context; a CA bundle named in the environment replaces the system store."""
    for name in CA_BUNDLE_VARIABLES:
        bundle = os.environ.get(name)
        if bundle:
            return ssl.create_default_context(cafile=bundle)
    return ssl.create_default_context()


def _bypassed(host: str, no_proxy: str) -> bool:
    """Whether `NO_PROXY` (comma-separated names, `.suffix`es, or `*`) exempts `host`."""
    host = host.lower()
    for entry in no_proxy.replace(" ", "").lower().split(","):
        if entry == "*":
            return True
        name = entry.lstrip(".").rsplit(":", 1)[0] if "]" not in entry else entry
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def _proxy_auth(proxy: SplitResult) -> dict[str, str]:
    if proxy.username is None:
        return {}
    user = unquote(proxy.username)
    password = unquote(proxy.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return {"Proxy-Authorization": f"Basic {token}"}


class _ProxiedConnection(http.client.HTTPConnection):
    """A plain-HTTP connection to a proxy that adds its credentials to every request."""

    def __init__(
        self, host: str, port: int | None, proxy_headers: Mapping[str, str], *, timeout: float
    ) -> None:
        super().__init__(host, port, timeout=timeout)
        self._proxy_headers = dict(proxy_headers)

    def putrequest(
        self, method: str, url: str, skip_host: bool = False, skip_accept_encoding: bool = False
    ) -> None:
        """Send the request line (an absolute URL), then the proxy's own headers."""
        super().putrequest(method, url, skip_host, skip_accept_encoding)
        for name, value in self._proxy_headers.items():
            self.putheader(name, value)


def outgoing_headers(
    api: str, incoming: Mapping[str, str], upstream: Mapping[str, str]
) -> dict[str, str]:
    """The headers sent upstream: Pi's descriptive ones, then ours (auth) over any of them."""
    out = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    for name in _FORWARDED:
        if name in incoming:
            out[name] = incoming[name]
    if api == ANTHROPIC:
        out.setdefault("anthropic-version", ANTHROPIC_VERSION)
    given = {name.lower() for name in upstream}
    out = {name: value for name, value in out.items() if name.lower() not in given}
    return {**out, **upstream}


class Redactor:
    """Replaces every credential found in the upstream headers by `[redacted]`."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._secrets = _secrets(headers)

    def text(self, text: str) -> str:
        """`text` with every secret replaced."""
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def value(self, value: Any) -> Any:
        """A JSON-like value with every secret replaced in every string."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value


def _secrets(headers: Mapping[str, str]) -> tuple[str, ...]:
    # Every header value, and the token of "Bearer X"/"Basic X", counts as secret; short values
    # (like an api version) are not credentials and would redact innocent text.
    found: set[str] = set()
    for value in headers.values():
        for candidate in (value, value.partition(" ")[2]):
            candidate = candidate.strip()
            if len(candidate) >= _MIN_SECRET and not _is_version(candidate):
                found.add(candidate)
    return tuple(sorted(found, key=len, reverse=True))


def _is_version(value: str) -> bool:
    return all(ch.isdigit() or ch == "-" for ch in value)


@dataclass(frozen=True)
class CountAnswer:
    """The provider's answer to a forwarded count request; `error` when it could not be had."""

    status: int
    data: bytes
    tokens: int | None
    error: str | None = None


def forward_count(
    messages_url: str, raw: bytes, headers: Mapping[str, str], timeout: float
) -> CountAnswer:
    """Forward a count request to the provider whose messages API is at `messages_url`."""
    url = f"{messages_url}{COUNT_PATH.removeprefix('/v1/messages')}"
    connection, target = connect(url, timeout)
    try:
        connection.request("POST", target, body=raw, headers={**headers, "Accept": "*/*"})
        response = connection.getresponse()
        data = response.read()
    except (OSError, http.client.HTTPException) as error:
        message = f"upstream unreachable: a token count could not be forwarded to {url} ({error})"
        return CountAnswer(502, error_reply(ANTHROPIC, 502, message).body, None, message)
    finally:
        connection.close()
    tokens = counted_tokens(data) if response.status == 200 else None
    return CountAnswer(response.status, data, tokens)
