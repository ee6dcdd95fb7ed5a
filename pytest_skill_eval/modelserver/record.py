"""Recording routes: forward a host's model requests to the real provider, write a cassette."""

from __future__ import annotations

import dataclasses
import http.client
import secrets
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_skill_eval.evidence.redact import Redactor as EvidenceRedactor
from pytest_skill_eval.modelserver.bodies import request_excerpt
from pytest_skill_eval.modelserver.cassette import cassette_data, write_cassette
from pytest_skill_eval.modelserver.paths import COUNT_PATHS, api_path
from pytest_skill_eval.modelserver.placeholders import (
    Stamps,
    normalise_request,
    normalise_response,
    request_sha256,
)
from pytest_skill_eval.modelserver.relay import Relay
from pytest_skill_eval.modelserver.rendering import Renderer, as_written
from pytest_skill_eval.modelserver.route import (
    SCRIPT_FAILURE_STATUS,
    RecordedRequest,
    Reply,
    Route,
    RouteFailure,
    StreamedReply,
    json_object,
)
from pytest_skill_eval.modelserver.script import (
    MATCH_MODES,
    Interaction,
    MatchMode,
    RequestNote,
    Script,
    ScriptedResponse,
    TokenCount,
    Usage,
)
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from pytest_skill_eval.modelserver.streams import error_response
from pytest_skill_eval.modelserver.upstream import (
    RecordError,
    Redactor,
    check_recordable,
    connect,
    forward_count,
    outgoing_headers,
    upstream_url,
)
from pytest_skill_eval.modelserver.wire import WireReply, error_reply

from ..common.wording import counted

RECORD_MODES: tuple[str, ...] = ("once", "all")
_SAVE_WAIT_S = 30.0


class RecordingRoute(Route):
    """A route that forwards requests to the real provider and keeps their answers.

    Pi's stream is relayed unchanged, chunk by chunk, while it is parsed into the neutral form.
    The cassette (`version: 1`, `match`, interactions with `request` notes that keep the
    normalised body) is written atomically by `save()`, which `close()` calls. A route opens
    itself on a server with `RecordingRoute.open`.
    """

    @classmethod
    def open(
        cls,
        server: ScriptedModelServer,
        *,
        api: str,
        upstream_base_url: str,
        cassette_path: Path,
        existing: Script | None = None,
        mode: str = "once",
        placeholders: Mapping[str, str] | None = None,
        workspace: Path | None = None,
        upstream_headers: Mapping[str, str] | None = None,
        match: MatchMode | None = None,
        upstream_timeout_s: float = 300.0,
        prices: Mapping[str, float] | None = None,
        render: Renderer = as_written,
        stamps: Stamps = (),
    ) -> RecordingRoute:
        """Register a route on `server` that records real model traffic into `cassette_path`.

        `mode` "all" forwards every request upstream; "once" replays the interactions of
        `existing` first and forwards (and appends) only the requests past its end. The
        cassette is written when the route is closed (or `save()`d). `prices` (USD per
        million tokens) price the usage each upstream answer reports, into `spent`.
        """
        route = cls(
            server,
            secrets.token_urlsafe(16),
            api=api,
            upstream_base_url=upstream_base_url,
            cassette_path=cassette_path,
            existing=existing,
            mode=mode,
            placeholders=placeholders or {},
            workspace=workspace,
            upstream_headers=upstream_headers or {},
            match=match,
            upstream_timeout_s=upstream_timeout_s,
            prices=prices,
        )
        route.render = render
        route.stamps = tuple(stamps)
        server.register(route)
        return route

    def __init__(
        self,
        server: ScriptedModelServer,
        token: str,
        *,
        api: str,
        upstream_base_url: str,
        cassette_path: Path,
        existing: Script | None,
        mode: str,
        placeholders: Mapping[str, str],
        upstream_headers: Mapping[str, str],
        match: MatchMode | None,
        upstream_timeout_s: float,
        prices: Mapping[str, float] | None = None,
        workspace: Path | None = None,
    ) -> None:
        check_recordable(api)
        if mode not in RECORD_MODES:
            raise RecordError(f"record mode must be one of {', '.join(RECORD_MODES)}, got {mode!r}")
        if match is not None and match not in MATCH_MODES:
            raise RecordError(f"match must be one of {', '.join(MATCH_MODES)}, got {match!r}")
        self.api = api
        self.mode = mode
        self.upstream = upstream_url(upstream_base_url, api)
        self.cassette_path = cassette_path
        kept = existing if mode == "once" else None
        super().__init__(server, token, kept, cassette_path, placeholders, workspace)
        self.match: MatchMode = match or (existing.match if existing is not None else "order")
        self.cassette_sha256: str | None = None
        self._headers = dict(upstream_headers)
        self._redactor = Redactor(upstream_headers)
        # The run's own secrets (inherited values, credentials), set once the run is launched.
        self._secrets = EvidenceRedactor()
        self._timeout = upstream_timeout_s
        self._kept = len(kept.interactions) if kept is not None else 0
        # New interactions in request order; None while an answer is still streaming, or when
        # the request never got one (its slot is then dropped with everything after it).
        self._slots: list[Interaction | None] = []
        self._open: set[int] = set()
        self._idle = threading.Condition(self._lock)
        self._saved: tuple[int, int] | None = None
        # New token counts in arrival order; none after a count that could not be recorded.
        self._counts: list[TokenCount] = []
        self._counts_broken = False
        self._prices = dict(prices or {})
        self._spent = 0.0

    def base_url(self, api: str) -> str:
        """The `baseUrl` Pi should use; only the route's own api is accepted."""
        if api != self.api:
            raise ValueError(f"this recording route serves {self.api}, not {api!r}")
        return super().base_url(api)

    @property
    def spent(self) -> float:
        """USD the upstream answers cost at `prices`, from the usage each answer reported."""
        with self._lock:
            return round(self._spent, 10)

    def _charge(self, usage: Usage) -> None:
        prices = self._prices
        cost = (
            usage.input * prices.get("input", 0.0)
            + usage.output * prices.get("output", 0.0)
            + usage.cache_read * prices.get("cacheRead", 0.0)
            + usage.cache_write * prices.get("cacheWrite", 0.0)
        ) / 1_000_000
        with self._lock:
            self._spent += cost

    @property
    def recorded(self) -> int:
        """How many new interactions were recorded (complete answers only)."""
        with self._lock:
            return len(self._prefix())

    def close(self) -> None:
        """Stop taking requests, then write the cassette; a write failure becomes a failure."""
        super().close()
        try:
            self.save()
        except RecordError as error:
            with self._lock:
                self.failures.append(RouteFailure("cassette-write-failed", str(error), None))

    def save(self) -> Path | None:
        """Write the cassette when something new was recorded; return its path (else None).

        Waits for answers still streaming. Replaces the file atomically (tmp + rename).
        """
        with self._idle:
            if not self._idle.wait_for(lambda: not self._open, timeout=_SAVE_WAIT_S):
                self.failures.append(
                    RouteFailure(
                        "recording-incomplete",
                        f"{counted(len(self._open), 'upstream answer')} still streaming after "
                        f"{_SAVE_WAIT_S:.0f} s; {self.cassette_path} keeps the finished ones",
                        None,
                    )
                )
            new = self._prefix()
            counts = self._counts_recorded()
            size = (len(new), len(counts))
            if not new or self._saved == size:
                return self.cassette_path if new else None
            kept = self.script.interactions[: self._kept] if self.script is not None else ()
            interactions = [*kept, *new]
        self._write(interactions, counts)
        with self._lock:
            self._saved = size
        return self.cassette_path

    def _prefix(self) -> list[Interaction]:
        # Only the unbroken run of finished answers can be replayed in order.
        done: list[Interaction] = []
        for slot in self._slots:
            if slot is None:
                break
            done.append(slot)
        return done

    def _counts_recorded(self) -> list[TokenCount]:
        kept = self.script.token_counts if self.script is not None else ()
        return [*kept, *self._counts]

    def _write(self, interactions: list[Interaction], counts: list[TokenCount]) -> None:
        data = cassette_data(self.match, interactions, counts)
        # Credentials are redacted in every value and again in the text, as two independent nets.
        clean = self._secrets.redact_value(self._redactor.value(data))[0]
        self.cassette_sha256 = write_cassette(self.cassette_path, clean, self._redact)

    # --- serving ---------------------------------------------------------------------------

    def _serve(self, api: str | None, path: str, raw: bytes, headers: Mapping[str, str]) -> Reply:
        if api == self.api and path in COUNT_PATHS:
            return self._count_upstream(api, path, raw, headers)
        body = json_object(raw)
        parsed = body if body is not None else {}
        normal = normalise_request(parsed, self.placeholders, self.stamps)
        sha = request_sha256(normal)
        replayed: Interaction | None = None
        slot: int | None = None
        with self._lock:
            cursor = self._cursor
            status, failure = self._precheck(api, path, body)
            if failure is None:
                self._cursor += 1
                if cursor < self._kept and self.script is not None:
                    replayed = self.script.interactions[cursor]
                    failure = self._mismatch(replayed.request, cursor, sha, normal)
                    if failure is not None:
                        status = SCRIPT_FAILURE_STATUS
                    elif replayed.response.error is not None:
                        status = replayed.response.error.status
                else:
                    slot = len(self._slots)
                    self._slots.append(None)
                    self._open.add(slot)
            answered = None if failure is not None and replayed is None else cursor
            index = self._note(api, path, parsed, sha, status, answered, failure)
        if failure is not None or api is None:
            message = failure.message if failure is not None else "no interaction"
            return error_reply(api or self.api, status, message.split("\n", 1)[0])
        if replayed is not None:
            return self._replay(api, replayed, cursor, parsed, path)
        assert slot is not None
        note = RequestNote(
            api=api,
            model=_model(parsed),
            sha256=sha,
            excerpt=request_excerpt(normal),
            body=normal,
        )
        reply = self._forward(slot, cursor, raw, headers, note)
        if reply.status != status:
            # The request's status is what Pi got: the provider's error or the relay's 502.
            with self._lock:
                entry = self.requests[index]
                self.requests[index] = dataclasses.replace(entry, status=reply.status)
        return reply

    def _count_upstream(self, api: str, path: str, raw: bytes, headers: Mapping[str, str]) -> Reply:
        """A token count: the kept cassette's next one (`once`), else the provider's, recorded."""
        body = json_object(raw)
        kept = self.script.token_counts if self.script is not None else ()
        with self._lock:
            index = len(self.counts)
            local = self._closed or body is None or index < len(kept)
        if local or body is None:
            return super()._serve(api, path, raw, headers)
        normal = normalise_request(body, self.placeholders, self.stamps)
        sha = request_sha256(normal)
        with self._lock:
            self.counts.append(RecordedRequest(index, api, path, body, sha, 200, None))
        outgoing = outgoing_headers(api, headers, self._headers)
        answer = forward_count(self.upstream, raw, outgoing, self._timeout)
        data = self._redact(answer.data.decode("utf-8", "replace")).encode("utf-8")
        with self._lock:
            self.counts[index] = dataclasses.replace(self.counts[index], status=answer.status)
            if answer.tokens is None or self._counts_broken:
                self._counts_broken = True
            else:
                note = RequestNote(api=api, model=_model(body), sha256=sha, body=normal)
                self._counts.append(TokenCount(answer.tokens, note))
            if answer.error is not None:
                message = f"{answer.error}; check the provider baseUrl and the network"
                self.failures.append(
                    RouteFailure("upstream-unreachable", self._redact(message), None)
                )
        return WireReply(answer.status, (("Content-Type", "application/json"),), (data,))

    def _precheck(
        self, api: str | None, path: str, body: dict[str, Any] | None
    ) -> tuple[int, RouteFailure | None]:
        if api != self.api and not self._closed:
            message = (
                f"unsupported path {path}: this recording route forwards {self.api} requests "
                f"({api_path(self.api)}) only"
            )
            return 404, RouteFailure("unsupported-path", message, None)
        return self._check_open(path, body)

    def _forward(
        self, slot: int, number: int, raw: bytes, headers: Mapping[str, str], note: RequestNote
    ) -> Reply:
        connection, target = connect(self.upstream, self._timeout)
        try:
            outgoing = outgoing_headers(self.api, headers, self._headers)
            connection.request("POST", target, body=raw, headers=outgoing)
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            message = self._redact(
                f"upstream unreachable: request {number + 1} could not be forwarded to "
                f"{self.upstream} ({error}); check the provider baseUrl and the network"
            )
            self._settle(slot, None, RouteFailure("upstream-unreachable", message, number))
            return error_reply(self.api, 502, message)
        if response.status >= 400:
            return self._relay_error(slot, number, connection, response, note)
        if response.status != 200:
            connection.close()
            message = (
                f"unexpected upstream answer: {self.upstream} answered HTTP {response.status} "
                f"to request {number + 1}; only streamed 200 answers and errors can be recorded"
            )
            self._settle(slot, None, RouteFailure("upstream-unexpected", message, number))
            return error_reply(self.api, 502, message)
        relay = Relay(self, slot, number, connection, response, note)
        content_type = response.getheader("Content-Type") or "text/event-stream"
        return StreamedReply(
            status=200,
            headers=(("Content-Type", content_type), ("Cache-Control", "no-cache")),
            chunks=relay,
            close=relay.close,
        )

    def _relay_error(
        self,
        slot: int,
        number: int,
        connection: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        note: RequestNote,
    ) -> Reply:
        try:
            data = response.read()
        except (OSError, http.client.HTTPException):
            data = b""
        finally:
            connection.close()
        # An error body may quote the credentials (e.g. "invalid key sk-..."): redact both ways.
        data = self._redact(data.decode("utf-8", "replace")).encode("utf-8")
        answer = error_response(response.status, data)
        self._settle(slot, self._interaction(answer, note), None)
        content_type = response.getheader("Content-Type") or "application/json"
        return WireReply(response.status, (("Content-Type", content_type),), (data,))

    def _interaction(self, answer: ScriptedResponse, note: RequestNote) -> Interaction:
        return Interaction(response=normalise_response(answer, self.placeholders), request=note)

    def _settle(
        self, slot: int, interaction: Interaction | None, failure: RouteFailure | None
    ) -> None:
        with self._idle:
            if slot not in self._open:
                return
            self._slots[slot] = interaction
            self._open.discard(slot)
            if failure is not None:
                self.failures.append(failure)
            self._idle.notify_all()

    def use_redactor(self, redactor: EvidenceRedactor) -> None:
        """Redact the run's secrets too from the cassette and every failure message."""
        with self._lock:
            self._secrets = redactor

    def _redact(self, text: str) -> str:
        return self._secrets.redact_text(self._redactor.text(text))[0]


def _model(body: Mapping[str, Any]) -> str | None:
    return body["model"] if isinstance(body.get("model"), str) else None


__all__ = ["RECORD_MODES", "RecordingRoute"]
