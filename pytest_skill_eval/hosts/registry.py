"""The hosts the evaluator can run: one registration each, listed once.

Adding a host is its subpackage (`hosts/<name>/`, with a `registration.py`) and one line in
`REGISTERED`; everything that names hosts (option help and validation, node ids, the cross-host
table, the plan, the model server's dialects, credentials, binary checks) reads this list.
"""

from __future__ import annotations

from .claude_code.registration import CLAUDE_CODE
from .codex.registration import CODEX
from .copilot_cli.registration import COPILOT_CLI
from .gemini_cli.registration import GEMINI_CLI
from .opencode.registration import OPENCODE
from .pi.registration import PI
from .registration import HostRegistration, UnknownHostError

# In the order help texts, tables and documentation list them; the first is the default host,
# `nodeids.DEFAULT_HOST`.
REGISTERED: tuple[HostRegistration, ...] = (
    PI,
    CLAUDE_CODE,
    CODEX,
    GEMINI_CLI,
    OPENCODE,
    COPILOT_CLI,
)


def registered() -> tuple[HostRegistration, ...]:
    """Every registered host, in registration order (read at each call, so a host registered
    in-process is seen by every consumer)."""
    return REGISTERED


def names() -> tuple[str, ...]:
    """Every registered host's `runtime.host` name, in registration order."""
    return tuple(registration.name for registration in registered())


def registration_for(name: str) -> HostRegistration:
    """The registration of host `name` (UnknownHostError: no host answers to it)."""
    for registration in registered():
        if registration.name == name:
            return registration
    raise UnknownHostError(f"unknown runtime.host {name!r}; known: {', '.join(names())}")


class Registered:
    """A `Host` implementation's `registration`: the one the registry holds under `name` when it
    is read, so a registration replaced in-process is the one its host reads."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __get__(self, instance: object, owner: type | None = None) -> HostRegistration:
        return registration_for(self._name)


def by_api(api: str) -> tuple[HostRegistration, ...]:
    """The hosts whose model traffic the server must route for wire API `api`."""
    return tuple(registration for registration in registered() if api in registration.apis)
