"""Subject hosts: the coding agents the evaluator runs, behind one seam (`hosts.base.Host`).

Each host is a subpackage (`hosts/pi/`, …) with a `Host` implementation and a registration
listed in `hosts/registry.py`; `host_for` maps a definition's `runtime.host` to its
implementation, and `checked_binary` finds and checks the binary of a host once per process (a
controller hands every binary it checked to its workers: `handover`, `adopt`). Both refuse a
machine where a system-wide or managed layer of the host exists (`check_layers`);
`check_environment` refuses a group that declares a variable of the host's isolation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import HostError
from .environment import refusal
from .layers import kept_out
from .options import HostOptions
from .registration import UnknownHostError, load
from .registry import registration_for

if TYPE_CHECKING:
    from ..definitions import Group
    from .base import Executable, Host

__all__ = ["UnadoptedBinaryError", "UnknownHostError"]


def host_for(name: str) -> Host:
    """A new instance of the host implementation for `runtime.host` `name` (imported now)."""
    return registration_for(name).implementation()


def chosen_hosts(names: Iterable[str]) -> tuple[str, ...]:
    """Host names an invocation chose: each a known host (else UnknownHostError), each once,
    in the order given."""
    chosen: list[str] = []
    for name in names:
        registration_for(name)
        if name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def check_layers(name: str) -> None:
    """Refuse a machine where a system-wide or managed layer of host `name` exists."""
    registration = registration_for(name)
    kept_out(registration.display_name, registration.system_layers)


def check_environment(path: Path, group: Group, name: str, *, chosen: bool) -> None:
    """Refuse a group (file `path`) whose `runtime.environment` declares a variable of host
    `name`'s isolation: a DefinitionError at its pointer (`chosen`: by --skill-eval-host)."""
    from ..definitions import DefinitionError
    from ..definitions.conversion import pointer_of

    environment = group.effective_runtime.environment
    owned = registration_for(name).owned_environment
    refused = refusal(owned, name, environment.literal, environment.inherit, chosen=chosen)
    if refused is not None:
        raise DefinitionError(path, pointer_of(refused[0]), refused[1])


@runtime_checkable
class HandedOver(Protocol):
    """A checked binary a worker can adopt from its controller (its binary module's
    `from_handover` reads the record back)."""

    def handover(self) -> dict[str, Any]: ...


# Host name → (what it was checked for, None: handed over, not used yet; its checked binary).
_CHECKED: dict[str, tuple[tuple[HostOptions, Path] | None, Executable]] = {}


class UnadoptedBinaryError(HostError):
    """A worker could not adopt the binary its controller checked (it changed since): each of
    the worker's runs on that host is infrastructure-failed, saying so."""


# Host name → why this worker could not adopt the binary its controller checked.
_UNADOPTED: dict[str, UnadoptedBinaryError] = {}


def checked_binary(name: str, options: HostOptions, root: Path) -> Executable:
    """The located, version-checked binary of a host, once per process and options (a worker
    adopts its controller's), on a machine without its system layers."""
    if name in _UNADOPTED:
        raise _UNADOPTED[name]
    known = _CHECKED.get(name)
    if known is not None and known[0] is None:
        check_layers(name)  # handed over: this machine is checked here too, at first use
        _CHECKED[name] = known = ((options, root), known[1])
    if known is None or known[0] != (options, root):
        registration = registration_for(name)
        check_layers(name)
        _CHECKED[name] = ((options, root), registration.check_binary(options, root))
    return _CHECKED[name][1]


def handover() -> dict[str, dict[str, Any]]:
    """Every binary this process checked, as records a worker adopts (`adopt`)."""
    return {
        name: binary.handover()
        for name, (_, binary) in _CHECKED.items()
        if isinstance(binary, HandedOver)
    }


def adopt(handed: Mapping[str, Mapping[str, Any]]) -> None:
    """Worker: take the binaries the controller checked (`handover`) instead of checking them."""
    for name, record in handed.items():
        reader = load(f"{registration_for(name).subpackage}.binary:from_handover")
        try:
            _CHECKED[name] = (None, reader(record))
        except HostError as error:  # raised where a run needs it, never at the worker's start
            _UNADOPTED[name] = UnadoptedBinaryError(
                f"the {name} binary the controller checked cannot be used here: {error}"
            )
