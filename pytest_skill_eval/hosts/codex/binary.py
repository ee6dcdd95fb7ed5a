"""Finding the Codex CLI, checking its version, and refusing a machine it cannot be isolated on.

The knobs the host relies on (config keys, event shapes, the rollout format) are version-specific,
so any other version is refused. Codex reads `/etc/codex` whatever `CODEX_HOME` says: those
layers are declared here and refused by the shared check (`hosts.layers`). One more thing is
checked once, before any group runs: reads can be confined to the workspace and declared
resources (a mount namespace, `sandbox.py`), or the operator accepted that they are not.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import HostError
from ..base import ConfinableReads
from ..binaries import locate_for, pinned, version_of
from ..environment import baseline_environment
from .registration import CODEX

if TYPE_CHECKING:
    from ..options import HostOptions


UNCONFINED_OPTION = "--skill-eval-codex-unconfined-reads"


class CodexSetupError(HostError):
    """This machine or invocation cannot run Codex the way the evaluator must."""


# The native build each platform package of `@openai/codex` ships (as its Node launcher maps them).
_TARGETS = {
    ("linux", "x86_64"): ("@openai/codex-linux-x64", "x86_64-unknown-linux-musl"),
    ("linux", "aarch64"): ("@openai/codex-linux-arm64", "aarch64-unknown-linux-musl"),
    ("darwin", "x86_64"): ("@openai/codex-darwin-x64", "x86_64-apple-darwin"),
    ("darwin", "arm64"): ("@openai/codex-darwin-arm64", "aarch64-apple-darwin"),
}


@dataclass(frozen=True, slots=True)
class CodexBinary(ConfinableReads):
    """A checked Codex executable."""

    path: Path
    version: str
    # The bwrap that confines reads; None: reads are unconfined (the operator opted in).
    bwrap: Path | None = None
    # What runs: the native binary `path`'s launcher would exec, or `path` itself.
    executable: Path | None = None
    # The environment the npm launcher gives the native binary (its package root).
    launcher_env: tuple[tuple[str, str], ...] = ()

    @property
    def reads_confined(self) -> bool:
        """Whether a subject's reads stay inside its own roots (`run.prestart` asks)."""
        return self.bwrap is not None

    def handover(self) -> dict[str, Any]:
        """What a worker needs to adopt this binary unchecked (`from_handover`)."""
        return {
            "path": str(self.path),
            "version": self.version,
            "bwrap": str(self.bwrap) if self.bwrap else None,
            "executable": str(self.executable) if self.executable else None,
            "launcher_env": [list(pair) for pair in self.launcher_env],
        }

    @classmethod
    def from_handover(cls, handed: Mapping[str, Any]) -> CodexBinary:
        """The binary the controller checked (its bwrap proven to work on this machine)."""
        bwrap, executable = handed.get("bwrap"), handed.get("executable")
        return cls(
            Path(handed["path"]),
            str(handed["version"]),
            Path(bwrap) if bwrap else None,
            Path(executable) if executable else None,
            tuple((str(k), str(v)) for k, v in handed.get("launcher_env", ())),
        )


def native_codex(path: Path) -> tuple[Path, dict[str, str]] | None:
    """The native binary that the npm launcher `path` (`@openai/codex/bin/codex.js`) would
    exec, and the environment it would add; None when `path` is not that launcher or the
    platform package is missing.

    The launcher is a Node program whose only work is to find this binary and replace itself
    with it: starting Node for that costs 120 ms of CPU and wall time on every turn here, a
    third of a scripted Codex turn. Running the binary directly, with what the launcher adds
    (`CODEX_MANAGED_PACKAGE_ROOT`, `CODEX_MANAGED_BY_NPM`), is the same Codex without Node.
    """
    resolved = path.resolve()
    if resolved.name != "codex.js" or resolved.parent.name != "bin":
        return None
    package_root = resolved.parent.parent
    target = _TARGETS.get((sys.platform, platform.machine()))
    if target is None:
        return None
    package, triple = target
    vendors = [
        parent / "node_modules" / package / "vendor"
        for parent in [package_root, *package_root.parents]
    ]
    for vendor in [*vendors, package_root / "vendor"]:
        native = vendor / triple / "bin" / "codex"
        if native.is_file() and os.access(native, os.X_OK):
            env = {"CODEX_MANAGED_PACKAGE_ROOT": str(package_root), "CODEX_MANAGED_BY_NPM": "1"}
            return native, env
    return None


def check_codex(path: Path) -> CodexBinary:
    """Run `codex --version` once in an empty home; refuse anything but the pinned version.

    The version asked is that of what will run: the native binary behind the npm launcher
    when there is one (`native_codex`), else `path` itself."""
    native = native_codex(path)
    executable, launcher_env = native if native is not None else (path, {})
    env = baseline_environment()
    env |= {"HOME": os.devnull, "CODEX_HOME": os.devnull}
    found = pinned(CODEX, executable, version_of(executable, env, CODEX).group(0))
    return CodexBinary(
        path, found, confinement(path), executable, tuple(sorted(launcher_env.items()))
    )


def confinement(path: Path) -> Path | None:
    """The bwrap that can confine this Codex's reads here, or None."""
    from .sandbox import find_bwrap, works

    bwrap = find_bwrap(path)
    return bwrap if bwrap is not None and works(bwrap) else None


def check_machine(unconfined_reads: bool, confined: bool = False) -> None:
    """Refuse unconfined reads the invocation did not accept."""
    if not confined and not unconfined_reads:
        raise CodexSetupError(
            "Codex's sandbox does not confine reads to the workspace and declared resources "
            "(its shell can read any file the operator can), and bubblewrap cannot build the "
            "mount namespace that would on this machine; pass "
            f"{UNCONFINED_OPTION} to run Codex groups anyway (each run records "
            "reads: unconfined)"
        )


from_handover = CodexBinary.from_handover


def checked(options: HostOptions, root: Path) -> CodexBinary:
    """The pinned Codex, and a machine that confines its reads (or the operator's consent)."""
    binary = check_codex(locate_for(CODEX, options.binary, root, options.rootdir))
    check_machine(options.unconfined_reads, confined=binary.bwrap is not None)
    return binary
