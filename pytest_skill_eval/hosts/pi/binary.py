"""Finding the Pi binary, checking its version once, and building its argv and environment."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..binaries import PINNED_ESBUILD, HostNotFoundError, locate_for, version_of
from ..environment import baseline_environment
from ..runtime import NodeRuntime, node_command, node_entry, node_runtime
from .bundle import BundleError, PiBundle, checked_bundle, describe, pi_bundle
from .registration import MIN_VERSION, PI, PINNED

if TYPE_CHECKING:
    from ..options import HostOptions


@dataclass(frozen=True, slots=True)
class PiBinary:
    """A checked Pi: the executable found, its version, and how it is started."""

    path: Path
    version: str
    runtime: NodeRuntime | None = None  # None: the executable runs by itself
    entry: Path | None = None  # the JavaScript file Node starts: Pi's CLI or its bundle
    bundle: PiBundle | None = None

    def command(self) -> list[str]:
        """The argv prefix that starts this Pi: `<node> <entry>`, or the executable."""
        return node_command(self.runtime, self.entry, self.path)

    def record(self) -> dict[str, Any]:
        """What `run.json` keeps beside the version: the runtime (where Node starts it) and
        the form that ran."""
        runtime = {"runtime": self.runtime.record()} if self.runtime and self.entry else {}
        return {**runtime, "form": describe(self.bundle)}

    def handover(self) -> dict[str, Any]:
        """Everything a worker needs to start the same Pi (`from_handover`)."""
        return {
            "path": str(self.path),
            "version": self.version,
            "runtime": self.runtime.record() if self.runtime else None,
            "entry": str(self.entry) if self.entry else None,
            "bundle": self.bundle.sha256 if self.bundle else None,
        }

    @classmethod
    def from_handover(cls, handed: Mapping[str, Any]) -> PiBinary:
        """The controller's Pi; a bundle is checked against its manifest again before use."""
        runtime = handed.get("runtime")
        entry = Path(handed["entry"]) if handed.get("entry") else None
        bundle = None
        if handed.get("bundle") and entry is not None:
            bundle = checked_bundle(entry.parents[4])
            if bundle.sha256 != handed["bundle"]:
                raise BundleError(f"{entry}: the bundle changed since the controller checked it")
        return cls(
            Path(handed["path"]),
            str(handed["version"]),
            NodeRuntime.from_record(runtime) if runtime else None,
            entry,
            bundle,
        )


def locate_pi(explicit: str | None, root: Path, rootdir: Path | None = None) -> Path:
    """`--skill-eval-pi`, else `pi` on PATH, else `node_modules/.bin/pi` (from the root up to
    pytest's `rootdir`, then beside this package)."""
    return locate_for(PI, explicit, root, rootdir)


def check_pi(path: Path, runtime: NodeRuntime | None = None) -> PiBinary:
    """Run `pi --version` once (on `runtime` when Pi is a Node script); refuse a Pi older than
    the supported version."""
    env = baseline_environment()
    env |= {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
    entry = node_entry(path) if runtime is not None else None
    match = version_of(path, env, PI, command=node_command(runtime, entry, path))
    version = tuple(int(g) for g in match.groups())
    if version < MIN_VERSION:
        needs = f"pytest-skill-eval needs {PINNED} or newer: {PI.install}"
        raise HostNotFoundError(PI, f"{path} is Pi {match.group(0)}; {needs}")
    return PiBinary(path, match.group(0), runtime if entry else None, entry)


def pi_executable(
    explicit: str | None,
    root: Path,
    *,
    node: str | None = None,
    bundle: bool = True,
    notice: Callable[[str], None] | None = None,
    rootdir: Path | None = None,
) -> PiBinary:
    """The Pi subjects run: found, on the pinned Node (or `--skill-eval-node`), and as its
    verified bundle where one is proven for this Pi (`notice`: one line when it cannot be)."""
    path = locate_pi(explicit, root, rootdir)
    runtime = node_runtime(node, root, rootdir) if node_entry(path) is not None else None
    binary = check_pi(path, runtime)
    if not bundle or binary.entry is None or binary.version != PINNED:
        return binary  # only the pinned Pi's bundle is proven equivalent to it
    try:
        runs_on = binary.runtime.path if binary.runtime else None
        built = pi_bundle(binary.entry, esbuild_version=PINNED_ESBUILD, node=runs_on)
    except (BundleError, OSError) as error:  # OSError: the cache cannot be written
        line = f"skill-eval: Pi's bundle cannot be used ({error}); subjects run stock Pi"
        (notice or _stderr)(line)
        return binary
    return replace(binary, entry=built.entry, bundle=built)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def base_environment(home: Path, agent_dir: Path, tmp: Path) -> dict[str, str]:
    """The isolated baseline: operator PATH/locale, our own HOME, agent dir and TMPDIR."""
    env = baseline_environment()
    env.setdefault("PATH", os.defpath)
    env |= {
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "TMPDIR": str(tmp),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }
    return env


def pi_argv(
    pi: Sequence[str],
    *,
    mode: str,
    session_dir: Path | None,
    extensions: Sequence[Path],
    tools: Sequence[str],
    skills: Sequence[Path],
    model: Mapping[str, str] | None,
    prompt: str | None,
) -> list[str]:
    """Pi's argv, in the reference order (§4.2), minus flags Pi 0.73.1 does not have."""
    argv = [*pi, "--mode", mode]
    if mode == "json":
        argv.append("-p")
    argv += ["--session-dir", str(session_dir)] if session_dir else ["--no-session"]
    argv.append("--no-extensions")
    for extension in extensions:
        argv += ["--extension", str(extension)]
    argv += ["--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files"]
    argv += ["--tools", ",".join(tools)] if tools else ["--no-tools"]
    for skill in skills:
        argv += ["--skill", str(skill)]
    if model is not None:
        argv += ["--model", model["model"]]
        if model.get("thinking"):
            argv += ["--thinking", model["thinking"]]
    if prompt is not None:
        argv.append(prompt)
    return argv


from_handover = PiBinary.from_handover


def checked(options: HostOptions, root: Path) -> PiBinary:
    """Pi's binary, located (`--skill-eval-pi`, PATH, node_modules) and version-checked, as
    subjects start it (`pi_executable`)."""
    return pi_executable(
        options.binary, root, node=options.node, bundle=options.pi_bundle, rootdir=options.rootdir
    )
