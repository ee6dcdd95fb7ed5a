"""Finding the Copilot CLI binary and checking once that it is the pinned version.

`@github/copilot` is an npm launcher for a native build in a platform package
(`@github/copilot-linux-x64`), which the evaluator starts directly. The knobs the host relies on
(environment names, settings keys, event shapes) are version-specific, so any other version is
refused. The native build unpacks its bundled package on its first start; the check does that
once, into the evaluator's cache (`environment.package_cache`), which every run then reads;
another version's unpacked package goes once no run has used it for a month (`staged.prune`).
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..binaries import CheckedBinary, locate_for, module_bases, pinned, version_of
from ..environment import baseline_environment
from ..staged import used_and_pruned
from .environment import PACKAGE_CACHE, QUIET, package_cache
from .registration import COPILOT_CLI

if TYPE_CHECKING:
    from ..options import HostOptions

# The platform packages that hold the native build, by machine.
_PACKAGES = {"x86_64": "copilot-linux-x64", "aarch64": "copilot-linux-arm64"}


@dataclass(frozen=True, slots=True)
class CopilotCliBinary(CheckedBinary):
    """A checked Copilot CLI executable."""


def packaged_binary(root: Path, rootdir: Path | None = None) -> Path | None:
    """The native build in `node_modules/@github/<platform package>/copilot` in the project
    (from the definition root up to pytest's `rootdir`) or beside this package; None when none
    holds one."""
    package = _PACKAGES.get(platform.machine())
    if package is None:
        return None
    for base in module_bases(root, rootdir):
        candidate = base / "node_modules" / "@github" / package / "copilot"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.resolve()
    return None


def locate_copilot(explicit: str | None, root: Path, rootdir: Path | None = None) -> Path:
    """`--skill-eval-copilot-cli`, else `copilot` on PATH, else the pinned platform package."""
    if not explicit and shutil.which(COPILOT_CLI.command) is None:
        packaged = packaged_binary(root, rootdir)
        if packaged is not None:
            return packaged
    return locate_for(COPILOT_CLI, explicit, root, rootdir)


def check_copilot(path: Path) -> CopilotCliBinary:
    """Run `copilot --version` once in an empty home (which unpacks its package into the
    evaluator's cache); refuse anything but the pinned version."""
    env = baseline_environment() | QUIET
    with tempfile.TemporaryDirectory(prefix="skill-eval-copilot-") as home:
        env |= {"HOME": home, "COPILOT_HOME": str(Path(home) / ".copilot")}
        cache = package_cache(COPILOT_CLI.version)
        env[PACKAGE_CACHE] = str(cache)
        found = pinned(COPILOT_CLI, path, version_of(path, env, COPILOT_CLI).group(0))
    used_and_pruned(cache)
    return CopilotCliBinary(path, found)


from_handover = CopilotCliBinary.from_handover


def checked(options: HostOptions, root: Path) -> CopilotCliBinary:
    """`--skill-eval-copilot-cli`, else `copilot` on PATH, else the platform package; pinned."""
    return check_copilot(locate_copilot(options.binary, root, options.rootdir))
