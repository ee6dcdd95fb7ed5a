"""Relaying one upstream answer to the host chunk by chunk while parsing it for the cassette."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from typing import Protocol

from pytest_skill_eval.modelserver.route import RouteFailure
from pytest_skill_eval.modelserver.script import Interaction, RequestNote, ScriptedResponse, Usage
from pytest_skill_eval.modelserver.streams import stream_parser

_READ_SIZE = 64 * 1024


class Recorder(Protocol):
    """What a relay needs of the recording route it answers for (`RecordingRoute`)."""

    @property
    def api(self) -> str:
        """The api the route forwards."""

    @property
    def upstream(self) -> str:
        """The provider URL requests are forwarded to."""

    def _charge(self, usage: Usage) -> None: ...

    def _settle(
        self, slot: int, interaction: Interaction | None, failure: RouteFailure | None
    ) -> None: ...

    def _redact(self, text: str) -> str: ...

    def _interaction(self, answer: ScriptedResponse, note: RequestNote) -> Interaction: ...


class Relay:
    """The body of one relayed answer: yields upstream chunks as they come and parses them."""

    def __init__(
        self,
        route: Recorder,
        slot: int,
        number: int,
        connection: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        note: RequestNote,
    ) -> None:
        self._route = route
        self._slot = slot
        self._number = number
        self._connection = connection
        self._response = response
        self._note = note
        self._parser = stream_parser(route.api)
        self._settled = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            while True:
                chunk = self._response.read1(_READ_SIZE)
                if not chunk:
                    break
                self._parser.feed(chunk)
                # Settle before Pi sees the final event, so the next request finds it recorded.
                if self._parser.done and not self._settled:
                    self._finish()
                yield chunk
        except (OSError, http.client.HTTPException) as error:
            self._fail(
                "upstream-broken",
                f"upstream stream broke: the answer to request {self._number + 1} from "
                f"{self._route.upstream} ended early ({error})",
            )
            return
        if not self._settled:
            self._finish()

    def close(self) -> None:
        """Release the upstream connection; an answer Pi did not take whole is not recorded."""
        self._connection.close()
        if not self._settled:
            self._fail(
                "relay-aborted",
                f"relay aborted: Pi stopped reading the answer to request {self._number + 1} "
                "before it ended; that answer is not recorded",
            )

    def _finish(self) -> None:
        self._settled = True
        parsed = self._parser.finish()
        # The provider bills what it answered, whether or not the answer can be recorded.
        self._route._charge(parsed.response.usage)
        if parsed.problems:
            # An answer that would not replay as Pi saw it is left out of the cassette.
            failure = RouteFailure(
                "unrecordable-answer",
                self._route._redact(
                    f"the answer to request {self._number + 1} from {self._route.upstream} "
                    f"is not recorded: {'; '.join(parsed.problems)}"
                ),
                self._number,
            )
            self._route._settle(self._slot, None, failure)
            return
        interaction = self._route._interaction(parsed.response, self._note)
        self._route._settle(self._slot, interaction, None)

    def _fail(self, reason: str, message: str) -> None:
        self._settled = True
        self._route._settle(
            self._slot, None, RouteFailure(reason, self._route._redact(message), self._number)
        )


__all__ = ["Recorder", "Relay"]
