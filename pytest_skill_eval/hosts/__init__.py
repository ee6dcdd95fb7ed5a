"""Subject hosts: the coding agents the evaluator runs, behind one seam (`hosts.base.Host`).

Each host is a subpackage (`hosts/pi/`, …) with a `Host` implementation; `host_for` maps a
definition's `runtime.host` to it.
"""

from __future__ import annotations

from .base import Host


class UnknownHostError(LookupError):
    """A `runtime.host` no host implementation answers to."""


def host_for(name: str) -> Host:
    """The host implementation for `runtime.host` `name`."""
    # Imported here so that `hosts.process` and `hosts.observation` stay cheap to import.
    from .pi.host import PiHost

    hosts: dict[str, type[Host]] = {PiHost.name: PiHost}
    if name not in hosts:
        raise UnknownHostError(f"unknown runtime.host {name!r}; known: {', '.join(sorted(hosts))}")
    return hosts[name]()
