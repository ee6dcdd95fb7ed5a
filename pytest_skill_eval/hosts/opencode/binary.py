"""Finding the opencode binary, checking once that it is the pinned version, and its
system-wide layer.

opencode ships as a native (Bun) executable in a platform package (`opencode-linux-x64`), which
the evaluator depends on directly: no launcher script stands between it and the subject. The
knobs the host relies on (environment names, config keys, event shapes) are version-specific,
so any other version is refused. Whatever its XDG directories say, opencode 1.18.33 also reads
an administrator's managed configuration directory (`/etc/opencode` on Linux, its binary names
no variable that moves it outside its tests); where it exists no subject starts (`hosts.layers`).
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..binaries import (
    CheckedBinary,
    HostNotFoundError,
    locate_for,
    module_bases,
    pinned,
    version_of,
)
from ..environment import baseline_environment
from .registration import OPENCODE

if TYPE_CHECKING:
    from ..options import HostOptions

# The platform packages that hold the native build, by machine.
_PACKAGES = {"x86_64": ("opencode-linux-x64", "opencode-linux-x64-baseline")}


@dataclass(frozen=True, slots=True)
class OpencodeBinary(CheckedBinary):
    """A checked opencode executable."""


def packaged_binary(root: Path, rootdir: Path | None = None) -> Path | None:
    """The native build in `node_modules/<platform package>/bin/opencode` in the project (from
    the definition root up to pytest's `rootdir`) or beside this package; None when none holds
    one."""
    for base in module_bases(root, rootdir):
        for package in _PACKAGES.get(platform.machine(), ()):
            candidate = base / "node_modules" / package / "bin" / "opencode"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate.resolve()
    return None


def locate_opencode(explicit: str | None, root: Path, rootdir: Path | None = None) -> Path:
    """`--skill-eval-opencode`, else `opencode` on PATH, else the pinned platform package."""
    if not explicit and shutil.which("opencode") is None:
        packaged = packaged_binary(root, rootdir)
        if packaged is not None:
            return packaged
    return locate_for(OPENCODE, explicit, root, rootdir)


def check_opencode(path: Path) -> OpencodeBinary:
    """Run `opencode --version` once in an empty home; refuse anything but the pinned version,
    or a machine without the `rg` its skill tool searches with (without one it downloads it)."""
    env = baseline_environment()
    # It creates its data directories even to print its version: a throwaway home holds them.
    with tempfile.TemporaryDirectory(prefix="skill-eval-opencode-") as home:
        env |= {"HOME": home, "OPENCODE_DISABLE_AUTOUPDATE": "1"}
        env |= {f"XDG_{kind}_HOME": home for kind in ("CONFIG", "DATA", "CACHE", "STATE")}
        found = pinned(OPENCODE, path, version_of(path, env, OPENCODE).group(0))
    if shutil.which("rg", path=env.get("PATH", os.defpath)) is None:
        raise HostNotFoundError(
            OPENCODE,
            "opencode needs ripgrep (`rg`) on PATH, or its skill tool tries to download one; "
            "install ripgrep (Debian: `apt-get install ripgrep`)",
        )
    return OpencodeBinary(path, found)


from_handover = OpencodeBinary.from_handover


def checked(options: HostOptions, root: Path) -> OpencodeBinary:
    """`--skill-eval-opencode`, else `opencode` on PATH, else the platform package; pinned."""
    return check_opencode(locate_opencode(options.binary, root, options.rootdir))
