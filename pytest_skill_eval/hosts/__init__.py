"""Subject hosts: the coding agents the evaluator runs, behind one seam (`hosts.base.Host`).

Each host is a subpackage (`hosts/pi/`, …) with a `Host` implementation; `host_for` maps a
definition's `runtime.host` to it.
"""

from __future__ import annotations

from pathlib import Path

from .base import Executable, Host


class UnknownHostError(LookupError):
    """A `runtime.host` no host implementation answers to."""


def host_for(name: str) -> Host:
    """The host implementation for `runtime.host` `name`."""
    # Imported here so that `hosts.process` and `hosts.observation` stay cheap to import.
    from .claude_code.host import ClaudeCodeHost
    from .pi.host import PiHost

    hosts: dict[str, type[Host]] = {PiHost.name: PiHost, ClaudeCodeHost.name: ClaudeCodeHost}
    if name not in hosts:
        raise UnknownHostError(f"unknown runtime.host {name!r}; known: {', '.join(sorted(hosts))}")
    return hosts[name]()


_CHECKED: dict[str, Executable] = {}


def checked_binary(name: str, explicit: str | None, root: Path) -> Executable:
    """The located, version-checked binary of a host other than Pi, once per process."""
    if name not in _CHECKED:
        from .claude_code.binary import check_claude, locate_claude

        if name != "claude-code":
            raise UnknownHostError(f"no binary is known for runtime.host {name!r}")
        _CHECKED[name] = check_claude(locate_claude(explicit, root))
    return _CHECKED[name]
