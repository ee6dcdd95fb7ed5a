"""A route: one subject run's model endpoint, what it was asked, and the answers it replays."""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from pytest_skill_eval.common.wording import counted
from pytest_skill_eval.modelserver.counting import count_reply, estimate_tokens
from pytest_skill_eval.modelserver.gemini import GEMINI, model_of
from pytest_skill_eval.modelserver.paths import COUNT_PATHS, SERVED_PATHS
from pytest_skill_eval.modelserver.placeholders import (
    Stamps,
    fill_response,
    normalise_request,
    request_diff,
    request_sha256,
)
from pytest_skill_eval.modelserver.rendering import Renderer, as_written
from pytest_skill_eval.modelserver.responses import custom_tools
from pytest_skill_eval.modelserver.script import Interaction, RequestNote, Script
from pytest_skill_eval.modelserver.wire import (
    ANTHROPIC,
    OPENAI,
    OPENAI_RESPONSES,
    SERVED_APIS,
    WireReply,
    error_reply,
    render_stream,
)

# What a route answers when its script cannot (none, run out, a request unlike the recorded
# one): a status no host retries. Claude Code, Gemini CLI, opencode and Copilot CLI retry a 5xx
# with growing delays, each retry meeting the same failure: minutes a subject.
SCRIPT_FAILURE_STATUS = 400


@dataclass(frozen=True)
class RecordedRequest:
    """One request a route received, in arrival order.

    `index` is the 0-based arrival position; `interaction` the 0-based script interaction
    that answered it (None when the request failed before reaching the script).
    """

    index: int
    api: str | None
    path: str
    body: dict[str, Any]
    sha256: str
    status: int
    interaction: int | None


@dataclass(frozen=True)
class RouteFailure:
    """A request the route could not answer from its script; the run is infrastructure-failed.

    `interaction` is the 0-based interaction the request would have consumed, when relevant.
    """

    reason: str
    message: str
    interaction: int | None


@dataclass(frozen=True)
class StreamedReply:
    """An HTTP answer whose body is produced while it is sent (a relayed upstream stream).

    The handler calls `close` once it stops sending, whether the body was sent whole or not.
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    chunks: Iterable[bytes]
    close: Callable[[], None]


Reply = WireReply | StreamedReply


class RouteHost(Protocol):
    """What a route needs of the server it is registered on (`ScriptedModelServer`)."""

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT` of the running server."""

    def _retire(self, route: Route) -> None: ...


class Route:
    """The model endpoint of one subject run; created by `ScriptedModelServer.open_route`.

    `workspace` is that subject's workspace: rendering a scripted tool call reads a file it
    names only there (None: never). `render` writes the script's neutral tool calls as the
    calls of the host the route serves (the opener knows which).
    """

    def __init__(
        self,
        server: RouteHost,
        token: str,
        script: Script | None,
        source: Path | None,
        placeholders: Mapping[str, str],
        workspace: Path | None = None,
        render: Renderer = as_written,
        stamps: Stamps = (),
    ) -> None:
        self.token = token
        self.workspace = workspace
        self.render = render
        self.stamps = tuple(stamps)  # the served host's per-run values in its requests
        self.script = script
        self.source = source if source is not None else (script.source if script else None)
        self.placeholders: dict[str, str] = dict(placeholders)
        self.requests: list[RecordedRequest] = []
        self.counts: list[RecordedRequest] = []
        self.failures: list[RouteFailure] = []
        self._server = server
        self._lock = threading.Lock()
        self._closed = False
        self._cursor = 0

    def base_url(self, api: str) -> str:
        """The `baseUrl` a host should use for `api` (the SDKs append their own paths)."""
        root = f"{self._server.base_url}/r/{self.token}"
        if api in (OPENAI, OPENAI_RESPONSES):
            return f"{root}/v1"
        if api in (ANTHROPIC, GEMINI):
            return root  # the Gemini SDK appends `/v1beta/models/…`
        raise ValueError(f"unsupported api {api!r}; expected one of {', '.join(SERVED_APIS)}")

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._closed

    @property
    def consumed(self) -> int:
        """How many interactions of the script were handed out."""
        return self._cursor

    def close(self) -> None:
        """Unregister the route; later requests get HTTP 410 and a failure entry."""
        with self._lock:
            self._closed = True
        self._server._retire(self)

    def __enter__(self) -> Route:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _note(
        self,
        api: str | None,
        path: str,
        body: dict[str, Any],
        sha: str,
        status: int,
        interaction: int | None,
        failure: RouteFailure | None,
    ) -> int:
        """Record one request (and its failure) under the next arrival index, and return it."""
        # Callers hold the lock: the request list and the failures stay in arrival order.
        index = len(self.requests)
        if failure is not None:
            self.failures.append(failure)
        self.requests.append(RecordedRequest(index, api, path, body, sha, status, interaction))
        return index

    def _where(self) -> str:
        return str(self.source) if self.source is not None else "<inline script>"

    def _serve(self, api: str | None, path: str, raw: bytes, headers: Mapping[str, str]) -> Reply:
        """Answer one HTTP request (called from the HTTP handler threads).

        A reply that cannot be built (a bug, or a script value the wire cannot carry) fails the
        run as a route failure naming the script; it never escapes as a server-thread traceback.
        """
        try:
            if api is not None and path in COUNT_PATHS:
                return self._count(api, path, json_object(raw))
            return self._answer(api, path, json_object(raw))
        except Exception as error:  # the handler thread must answer every request
            message = (
                f"the scripted model server could not answer a request to {path} from "
                f"{self._where()}: {type(error).__name__}: {error}"
            )
            with self._lock:
                self.failures.append(RouteFailure("server-error", message, None))
            return error_reply(api or OPENAI, 500, message.split("\n", 1)[0])

    def _count(self, api: str, path: str, body: dict[str, Any] | None) -> WireReply:
        """Answer a token-count request: the script's next recorded count, else the estimate.

        Counts are kept in `counts`, apart from the model requests: they are no model call.
        """
        parsed = body if body is not None else {}
        normal = normalise_request(parsed, self.placeholders, self.stamps)
        sha = request_sha256(normal)
        with self._lock:
            index = len(self.counts)
            status, failure = self._check_open(path, body)
            recorded = self.script.token_counts if self.script is not None else ()
            count = recorded[index] if failure is None and index < len(recorded) else None
            if count is not None:
                failure = self._mismatch(count.request, index, sha, normal, "token_counts")
                status = SCRIPT_FAILURE_STATUS if failure is not None else status
            self.counts.append(RecordedRequest(index, api, path, parsed, sha, status, None))
            if failure is not None:
                self.failures.append(failure)
        if failure is not None:
            return error_reply(api, status, failure.message.split("\n", 1)[0])
        return count_reply(count.input_tokens if count is not None else estimate_tokens(parsed))

    def _answer(self, api: str | None, path: str, body: dict[str, Any] | None) -> WireReply:
        """Record one request and decide its reply (called from the HTTP handler threads)."""
        parsed = body if body is not None else {}
        normal = normalise_request(parsed, self.placeholders, self.stamps)
        sha = request_sha256(normal)
        interaction: Interaction | None = None
        with self._lock:
            cursor = self._cursor
            status, failure = self._check(api, path, body, cursor)
            if failure is None and self.script is not None:
                # Only requests the script answers move the cursor; failed ones consume nothing.
                interaction = self.script.interactions[cursor]
                self._cursor += 1
                failure = self._mismatch(interaction.request, cursor, sha, normal)
                if failure is not None:
                    status = SCRIPT_FAILURE_STATUS
                elif interaction.response.error is not None:
                    status = interaction.response.error.status
            answered = None if interaction is None else cursor
            self._note(api, path, parsed, sha, status, answered, failure)
        if failure is not None or interaction is None or api is None:
            message = failure.message if failure is not None else "no interaction"
            # Pi shows the first line; the route failure keeps the whole message (with a diff).
            return error_reply(api or OPENAI, status, message.split("\n", 1)[0])
        return self._replay(api, interaction, cursor, parsed, path)

    def _replay(
        self, api: str, interaction: Interaction, index: int, body: Mapping[str, Any], path: str
    ) -> WireReply:
        # `{{date}}` (the normalised date line) is filled with today unless a caller set it.
        values = {"date": datetime.date.today().isoformat(), **self.placeholders}
        response = fill_response(interaction.response, values)
        response = self.render(response, values, self.workspace)
        if response.latency_ms:
            time.sleep(response.latency_ms / 1000)
        model = str(body.get("model", "") or model_of(path) or "")
        custom = custom_tools(body) if api == OPENAI_RESPONSES else frozenset[str]()
        return render_stream(api, response, model=model, request_index=index, custom_tools=custom)

    def _check_open(
        self, path: str, body: dict[str, Any] | None
    ) -> tuple[int, RouteFailure | None]:
        """The failure of a request to a closed route or without a JSON body (else 200)."""
        if self._closed:
            message = f"route closed: a request to {path} arrived after the run ended"
            return 410, RouteFailure("route-closed", message, None)
        if body is None:
            message = f"a request to {path} has no JSON object body"
            return 400, RouteFailure("bad-request", message, None)
        return 200, None

    def _check(
        self, api: str | None, path: str, body: dict[str, Any] | None, cursor: int
    ) -> tuple[int, RouteFailure | None]:
        number = cursor + 1
        if api is None and not self._closed:
            message = f"unsupported path {path}: the scripted model server serves {SERVED_PATHS}"
            return 404, RouteFailure("unsupported-path", message, None)
        status, failure = self._check_open(path, body)
        if failure is not None:
            return status, failure
        if self.script is None:
            message = (
                f"no script: {self._where()} does not exist; write it or record it "
                f"(request {number} has no interaction)"
            )
            return SCRIPT_FAILURE_STATUS, RouteFailure("missing-script", message, cursor)
        count = len(self.script.interactions)
        if cursor >= count:
            message = (
                f"script exhausted: {self._where()} has {counted(count, 'interaction')}, "
                f"request {number} has none"
            )
            return SCRIPT_FAILURE_STATUS, RouteFailure("script-exhausted", message, cursor)
        return 200, None

    def _mismatch(
        self,
        note: RequestNote | None,
        index: int,
        sha: str,
        normal: Mapping[str, Any],
        recorded: str = "interactions",
    ) -> RouteFailure | None:
        """Under `match: body`, the failure of a request unlike the one recorded at
        `<recorded>[index]` (`interactions`, or `token_counts` for a count request)."""
        if self.script is None or self.script.match != "body":
            return None
        expected = note.sha256 if note else None
        if expected is None or expected == sha:
            return None
        where = f"{recorded}[{index}]"
        message = (
            f"request mismatch: {self._where()} {where} expects a request with "
            f"sha256 {expected}, request {index + 1} has {sha}; re-record the cassette"
        )
        if note is not None and note.body is not None:
            diff = request_diff(
                note.body,
                normal,
                expected_label=f"recorded {where}",
                actual_label=f"request {index + 1}",
            )
            message += "\n" + diff
        else:
            message += " (the cassette keeps no request body to compare)"
        return RouteFailure("request-mismatch", message, index)


def json_object(raw: bytes) -> dict[str, Any] | None:
    """The JSON object in a request body, or None when it is not one."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None
