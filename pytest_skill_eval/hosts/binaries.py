"""Finding a host's CLI and reading its version: the same rules for every host.

`--skill-eval-<host> PATH` wins, then the command on PATH, then `node_modules/.bin/<command>` in
the definition root and each directory above it up to pytest's rootdir (the project, where its
`package.json` is), then beside this package (`module_bases`). `<binary> --version` runs once,
in a bare environment, and its first `X.Y.Z` is the version. A Node host started as
`<node> <entry>` whose entry is the `bin` of its npm package has that package's declared
version, which is what its `--version` prints: reading it saves a whole start-up of the host
(over a second of CPU for Pi) at every session's start.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ..errors import HostError

if TYPE_CHECKING:
    from .registration import HostRegistration

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
# The esbuild that builds Pi's bundle and proves Gemini CLI's eager copy, as the lock pins it
# (tests/plugin/test_pi_bundle_e2e.py, tests/hosts/test_gemini_eager_e2e.py).
PINNED_ESBUILD = "0.28.2"
ESBUILD_BESIDE = PACKAGE_ROOT / "node_modules"  # where esbuild is looked for after the host's


class HostNotFoundError(HostError):
    """A host's binary is missing, not a version the evaluator supports, or cannot run here."""

    def __init__(self, registration: HostRegistration, message: str) -> None:
        super().__init__(message)
        self.registration = registration


@dataclass(frozen=True, slots=True)
class CheckedBinary:
    """A checked executable that is its path and the version it printed, nothing more."""

    path: Path
    version: str

    def handover(self) -> dict[str, Any]:
        """What a worker needs to adopt this binary unchecked (`from_handover`)."""
        return {"path": str(self.path), "version": self.version}

    @classmethod
    def from_handover(cls, handed: Mapping[str, Any]) -> Self:
        """The binary the controller checked."""
        return cls(Path(handed["path"]), str(handed["version"]))


def module_bases(root: Path, rootdir: Path | None = None) -> tuple[Path, ...]:
    """The directories whose `node_modules` may hold a host or the pinned Node, nearest first:
    the definition root, each directory above it up to pytest's `rootdir` (when the root is
    inside it), then the one beside this package."""
    root = root.resolve()
    top = rootdir.resolve() if rootdir is not None else root
    above = [root, *root.parents]
    bases = above[: above.index(top) + 1] if top in above else [root]
    return tuple(dict.fromkeys([*bases, PACKAGE_ROOT]))


def locate_for(
    registration: HostRegistration, explicit: str | None, root: Path, rootdir: Path | None = None
) -> Path:
    """The host's executable: its option's `explicit` path, else its command on PATH, else
    `node_modules/.bin/<command>` (`module_bases`); else `HostNotFoundError` saying how to
    install it."""
    command, option = registration.command, registration.option
    host, install = registration.display_name, registration.install

    def error(message: str) -> HostNotFoundError:
        return HostNotFoundError(registration, message)

    if explicit:
        candidate = Path(explicit).expanduser()
        found = shutil.which(str(candidate)) if not candidate.is_absolute() else str(candidate)
        if found and Path(found).is_file():
            return Path(found).resolve()
        raise error(
            f"{option} {explicit}: no such executable; install {host} with {install} "
            "or point the option at it"
        )
    on_path = shutil.which(command)
    if on_path:
        return Path(on_path).resolve()
    for base in module_bases(root, rootdir):
        local = base / "node_modules" / ".bin" / command
        if local.is_file():
            return local.resolve()
    raise error(
        f"{host} was not found: install it with {install} in the project's root, "
        f"put `{command}` on PATH, or pass {option} PATH"
    )


def version_of(
    path: Path,
    env: Mapping[str, str],
    registration: HostRegistration,
    *,
    command: Sequence[str] = (),
) -> re.Match[str]:
    """The `X.Y.Z` that `path --version` prints (started as `command`, when given); a failure
    or no version is `HostNotFoundError`. Started as `<node> <entry>`, the entry's package says
    it."""
    declared = package_version(Path(command[-1])) if len(command) == 2 else None
    if declared is not None:
        return declared
    try:
        done = subprocess.run(
            [*(command or [str(path)]), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as failure:
        message = f"{path} --version failed: {failure}"
        raise HostNotFoundError(registration, message) from failure
    match = VERSION.search(done.stdout + done.stderr)
    if done.returncode != 0 or match is None:
        raise HostNotFoundError(
            registration,
            f"{path} --version did not print a version (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[:200]}",
        )
    return match


def pinned(registration: HostRegistration, path: Path, found: str) -> str:
    """`found`, the version `path` printed, when it is the pinned one; else `HostNotFoundError`
    naming the version supported and how to install it."""
    if found != registration.version:
        host, supported = registration.display_name, registration.version
        raise HostNotFoundError(
            registration,
            f"{path} is {host} {found}; pytest-skill-eval supports exactly {supported}: "
            f"{registration.install}",
        )
    return found


def package_version(entry: Path) -> re.Match[str] | None:
    """The version of the npm package whose `bin` is `entry` (its nearest `package.json`, no
    more than three directories up), else None: then only running it can tell."""
    entry = entry.resolve()
    for base in list(entry.parents)[:3]:
        try:
            manifest = json.loads((base / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(manifest, dict):
            return None
        bins = manifest.get("bin")
        named = bins.values() if isinstance(bins, dict) else [bins]
        version = manifest.get("version")
        if not isinstance(version, str) or not any(
            isinstance(path, str) and (base / path).resolve() == entry for path in named
        ):
            return None
        return VERSION.fullmatch(version)
    return None


def esbuild_binary(package: Path) -> Path | None:
    """The pinned esbuild: beside the host package's dependencies (`package` is
    `…/node_modules/<scope>/<name>`), else beside this package."""
    for base in (package.parents[1], ESBUILD_BESIDE):
        candidate = base / ".bin" / "esbuild"
        if candidate.is_file():
            return candidate.resolve()
    return None


def esbuild_version(esbuild: Path) -> str:
    """What `esbuild --version` prints ("" where it cannot run or fails)."""
    try:
        done = subprocess.run(
            [str(esbuild), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""
