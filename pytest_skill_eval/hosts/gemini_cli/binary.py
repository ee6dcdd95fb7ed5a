"""Finding Gemini CLI, checking its version, and the layers it reads from outside its home.

The knobs the host relies on (settings keys, the stream-json events, the skills directory,
`activate_skill` under `--approval-mode yolo`) are version-specific, so any other version is
refused. Gemini CLI reads `/etc/gemini-cli` whatever HOME says: the system settings and system
defaults (which the launch also moves into the isolated home through
`GEMINI_CLI_SYSTEM_SETTINGS_PATH` and `GEMINI_CLI_SYSTEM_DEFAULTS_PATH`) and the system policies
beside them, which no variable moves. Where the directory exists no subject starts
(`hosts.layers`).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..binaries import esbuild_binary, locate_for, pinned, version_of
from ..environment import baseline_environment
from ..factories import FactoryError
from ..runtime import NodeBinary, node_command, node_entry, node_runtime
from .eager import EagerCopy, EagerError, checked_copy, describe, eager_copy, package_of
from .registration import GEMINI_CLI, PINNED

if TYPE_CHECKING:
    from ..options import HostOptions


# Node's flags for a subject's Gemini CLI. A young generation of up to 16 MB a semi-space: the
# bundle's start allocates more than a smaller one holds, and each scavenge promotes what it
# holds into the old generation, whose marking then ran beside the start (docs/benchmarks.md).
# A flag that changes V8's code (a JIT or WebAssembly tier) would make Node refuse its own
# built-in code cache and the warm compile cache: this one changes neither.
NODE_FLAGS = ("--max-semi-space-size=16",)


@dataclass(frozen=True, slots=True)
class GeminiBinary(NodeBinary):
    """A checked Gemini CLI, started from its eager copy where one is built (`eager.py`)."""

    eager: EagerCopy | None = None

    def command(self) -> list[str]:
        """`<node> NODE_FLAGS <entry>`, or the executable itself."""
        return node_command(self.runtime, self.entry, self.path, NODE_FLAGS)

    def record(self) -> dict[str, Any]:
        """What `run.json` keeps beside the version: the runtime, and the form that ran."""
        return {**NodeBinary.record(self), "form": describe(self.eager)}

    def handover(self) -> dict[str, Any]:
        """What a worker needs to start the same Gemini CLI (`from_handover`)."""
        return {**NodeBinary.handover(self), "eager": self.eager.sha256 if self.eager else None}

    @classmethod
    def from_handover(cls, handed: Mapping[str, Any]) -> GeminiBinary:
        """The controller's Gemini CLI; its copy's manifest is checked again before use."""
        node = NodeBinary.from_handover(handed)
        eager = None
        if handed.get("eager") and node.entry is not None:
            eager = checked_copy(node.entry.parents[2], hashed=False)
            if eager.sha256 != handed["eager"]:
                raise EagerError(f"{node.entry}: the copy changed since the controller checked it")
        return cls(node.path, node.version, node.runtime, node.entry, eager)


def check_gemini(
    path: Path, node: str | None, root: Path, rootdir: Path | None = None
) -> GeminiBinary:
    """Run `gemini --version` once, on the Node it will run on, in an empty home; refuse
    anything but the pinned version."""
    runtime = node_runtime(node, root, rootdir) if node_entry(path) is not None else None
    command = node_command(runtime, node_entry(path) if runtime else None, path)
    with tempfile.TemporaryDirectory(prefix="skill-eval-gemini-") as home:
        env = baseline_environment()
        env |= {"HOME": home, "GEMINI_CLI_HOME": home, "GEMINI_CLI_NO_RELAUNCH": "true"}
        found = version_of(path, env, GEMINI_CLI, command=command).group(0)
    return GeminiBinary.of(path, pinned(GEMINI_CLI, path, found), node, root, rootdir)


def with_eager_copy(
    binary: GeminiBinary, notice: Callable[[str], None] | None = None
) -> GeminiBinary:
    """`binary` started from its eager copy, built on first use; as it is (with one `notice`
    line) where no copy can be built for it."""
    runtime, entry = binary.runtime, binary.entry
    if runtime is None or entry is None or binary.version != PINNED:
        return binary
    package = package_of(entry)
    esbuild = esbuild_binary(package) if package else None
    try:
        if esbuild is None:
            raise EagerError("esbuild is not installed beside Gemini CLI or this package")
        copy = eager_copy(entry, binary.version, esbuild=esbuild, node=runtime.path)
    except (FactoryError, OSError) as error:
        line = f"skill-eval: Gemini CLI's eager copy cannot be used ({error}); subjects run "
        line += "its own files"
        (notice or _stderr)(line)
        return binary
    return replace(binary, entry=copy.entry, eager=copy)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


from_handover = GeminiBinary.from_handover


def checked(options: HostOptions, root: Path) -> GeminiBinary:
    """The pinned Gemini CLI, located and version-checked, on the pinned Node (or
    `--skill-eval-node`), from its eager copy unless `--skill-eval-gemini-eager off`."""
    path = locate_for(GEMINI_CLI, options.binary, root, options.rootdir)
    binary = check_gemini(path, options.node, root, options.rootdir)
    return with_eager_copy(binary) if options.gemini_eager else binary
