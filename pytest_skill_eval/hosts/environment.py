"""The environment variables a host owns: those that make up its isolation.

Each host declares its own in its subpackage (exposed as `Host.owned_environment`): every name
its `environment()` sets, and the families that steer its home, configuration, telemetry or
model endpoint. A group that declares one for the host it runs on is refused at collection
(`refusal`), and the launch never lets a declared value replace the host's (`subject_environment`):
`CLAUDE_CONFIG_DIR=/root/.claude` would otherwise hand the operator's own settings, skills and
credentials to the subject.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# What every host owns: its isolated home and temp dir, where it finds configuration and caches
# (XDG_*), and what Node would load before the host's own code.
# What every host is started with from the operator's environment: PATH and the locale.
BASELINE_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
COMMON_NAMES = ("HOME", "TMPDIR", "PWD", "NODE_OPTIONS", "NODE_COMPILE_CACHE")
COMMON_PREFIXES = ("XDG_",)


@dataclass(frozen=True, slots=True)
class OwnedEnvironment:
    """Exact names and name families a host owns, less the provider keys a live run inherits.

    Names compare case-insensitively, as the evaluator's own reservations do."""

    names: frozenset[str]
    prefixes: tuple[str, ...]
    allowed: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls, names: Iterable[str], prefixes: Iterable[str] = (), allowed: Iterable[str] = ()
    ) -> OwnedEnvironment:
        """A host's declaration, with what every host owns added."""
        return cls(
            frozenset(n.upper() for n in (*COMMON_NAMES, *names)),
            tuple(p.upper() for p in (*COMMON_PREFIXES, *prefixes)),
            frozenset(n.upper() for n in allowed),
        )

    def owns(self, name: str) -> bool:
        """Whether `name` belongs to the host (a definition may not set it)."""
        upper = name.upper()
        if upper in self.allowed:
            return False
        return upper in self.names or upper.startswith(self.prefixes)


def baseline_environment() -> dict[str, str]:
    """The operator's values of `BASELINE_KEYS` that are set."""
    return {k: os.environ[k] for k in BASELINE_KEYS if k in os.environ}


def refusal(
    owned: OwnedEnvironment,
    host: str,
    literal: Iterable[str],
    inherit: Sequence[str],
    *,
    chosen: bool,
) -> tuple[tuple[str | int, ...], str] | None:
    """Where a group's `runtime.environment` declares a name `host` owns (the path below the
    group) and the one-line refusal; None when it declares none. `chosen`: the host is the
    invocation's `--skill-eval-host`, not the group's `runtime.host`."""
    where = f"--skill-eval-host {host}" if chosen else f"runtime.host {host}"
    for name in literal:
        if owned.owns(name):
            return ("runtime", "environment", "literal", name), _message(name, where, "literal")
    for index, name in enumerate(inherit):
        if owned.owns(name):
            return ("runtime", "environment", "inherit", index), _message(name, where, "inherit")
    return None


def _message(name: str, where: str, kind: str) -> str:
    return (
        f"{name} belongs to the subject's isolation on {where}: the evaluator sets it, or it "
        "steers the host's home, configuration, telemetry or model endpoint, so a definition "
        f"cannot pass it; remove it from runtime.environment.{kind}"
    )


def subject_environment(
    owned: OwnedEnvironment, host: Mapping[str, str], declared: Mapping[str, str]
) -> dict[str, str]:
    """The declared variables the host does not own, then the host's own over them: a
    declaration that slipped past collection can neither replace nor add an owned name."""
    return {k: v for k, v in declared.items() if not owned.owns(k)} | dict(host)
