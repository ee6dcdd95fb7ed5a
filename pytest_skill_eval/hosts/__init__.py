"""Subject hosts: the coding agents the evaluator runs, behind one seam (`hosts.base.Host`).

Each host is a subpackage (`hosts/pi/`, …) with a `Host` implementation; `host_for` maps a
definition's `runtime.host` to it, and `checked_binary` finds and checks the binary of a host
other than Pi (Pi's is checked by the session, which may hand it to its workers). Both refuse a
machine where a system-wide or managed layer of the host exists (`check_layers`);
`check_environment` refuses a group that declares a variable of the host's isolation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .base import Executable, Host
from .environment import refusal
from .layers import kept_out

if TYPE_CHECKING:
    from ..definitions import Group


class UnknownHostError(LookupError):
    """A `runtime.host` no host implementation answers to."""


@dataclass(frozen=True, slots=True)
class HostOptions:
    """What the invocation says about a host's binary and what it accepts on this machine."""

    binary: str | None = None  # --skill-eval-<host> PATH
    unconfined_reads: bool = False  # --skill-eval-codex-unconfined-reads


# The binary option of each host: `--skill-eval-<name> PATH` (ini `skill_eval_<name>`), and the
# host's name in its help.
BINARY_OPTIONS = (
    ("pi", "Pi"),
    ("claude", "Claude Code"),
    ("codex", "Codex"),
    ("gemini", "Gemini CLI"),
)


def _hosts() -> dict[str, type[Host]]:
    # Imported here so that `hosts.process` and `hosts.observation` stay cheap to import.
    from .claude_code.host import ClaudeCodeHost
    from .codex.host import CodexHost
    from .gemini_cli.host import GeminiCliHost
    from .pi.host import PiHost

    hosts: tuple[type[Host], ...] = (PiHost, ClaudeCodeHost, CodexHost, GeminiCliHost)
    return {host.name: host for host in hosts}


def host_for(name: str) -> Host:
    """The host implementation for `runtime.host` `name`."""
    hosts = _hosts()
    if name not in hosts:
        raise UnknownHostError(f"unknown runtime.host {name!r}; known: {', '.join(sorted(hosts))}")
    return hosts[name]()


def chosen_hosts(names: Iterable[str]) -> tuple[str, ...]:
    """Host names an invocation chose: each a known host (else UnknownHostError), each once,
    in the order given."""
    chosen: list[str] = []
    for name in names:
        host_for(name)
        if name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def check_layers(name: str) -> None:
    """Refuse a machine where a system-wide or managed layer of host `name` exists."""
    host = host_for(name)
    kept_out(host.display_name, host.system_layers)


def check_environment(path: Path, group: Group, name: str, *, chosen: bool) -> None:
    """Refuse a group (file `path`) whose `runtime.environment` declares a variable of host
    `name`'s isolation: a DefinitionError at its pointer (`chosen`: by --skill-eval-host)."""
    from ..definitions import DefinitionError
    from ..definitions.conversion import pointer_of

    environment = group.effective_runtime.environment
    owned = host_for(name).owned_environment
    refused = refusal(owned, name, environment.literal, environment.inherit, chosen=chosen)
    if refused is not None:
        raise DefinitionError(path, pointer_of(refused[0]), refused[1])


def _claude_code(options: HostOptions, root: Path) -> Executable:
    from .claude_code.binary import check_claude, locate_claude

    return check_claude(locate_claude(options.binary, root))


def _codex(options: HostOptions, root: Path) -> Executable:
    from .codex.binary import check_codex, check_machine, locate_codex

    binary = check_codex(locate_codex(options.binary, root))
    check_machine(options.unconfined_reads, confined=binary.bwrap is not None)
    return binary


def _gemini_cli(options: HostOptions, root: Path) -> Executable:
    from .gemini_cli.binary import check_gemini, locate_gemini

    return check_gemini(locate_gemini(options.binary, root))


# The binary check of each host other than Pi: located, version-checked, machine-checked.
BINARY_CHECKS: dict[str, Callable[[HostOptions, Path], Executable]] = {
    "claude-code": _claude_code,
    "codex": _codex,
    "gemini-cli": _gemini_cli,
}
_CHECKED: dict[str, Executable] = {}


def checked_binary(name: str, options: HostOptions, root: Path) -> Executable:
    """The located, version-checked binary of a host other than Pi, once per process, on a
    machine without its system layers."""
    if name not in _CHECKED:
        check = BINARY_CHECKS.get(name)
        if check is None:
            raise UnknownHostError(f"no binary is known for runtime.host {name!r}")
        check_layers(name)
        _CHECKED[name] = check(options, root)
    return _CHECKED[name]
