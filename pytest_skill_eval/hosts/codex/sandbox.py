"""Read confinement for Codex: a mount namespace around the host, built with bubblewrap.

Codex's own sandbox limits writes and network but lets its shell read any file the operator can.
The evaluator therefore starts Codex itself inside `bwrap` (the copy Codex ships, else one on
PATH): only the system directories (`/usr`, `/etc`, read-only), the Codex package and Node, the
run's isolated home (read-write), the workspace (read-write) and the declared resources and skill
snapshots (read-only) exist in it, so a read anywhere else fails as a missing file. The network
namespace is shared: the loopback model server stays reachable. Codex's own sandbox still runs
inside it, nested.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

VENDORED = Path("@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/codex-resources/bwrap")
SYSTEM_READ_ONLY = ("/usr", "/etc")
USR_LINKS = (
    ("usr/bin", "/bin"),
    ("usr/sbin", "/sbin"),
    ("usr/lib", "/lib"),
    ("usr/lib64", "/lib64"),
)


def find_bwrap(codex: Path) -> Path | None:
    """The bwrap beside the Codex package (its `node_modules`), else `bwrap` on PATH."""
    for parent in codex.resolve().parents:
        if parent.name == "node_modules" and (parent / VENDORED).is_file():
            return parent / VENDORED
    found = shutil.which("bwrap")
    return Path(found) if found else None


def software_roots(codex: Path) -> list[Path]:
    """What Codex needs to start: its package tree and Node (when outside the system dirs)."""
    roots: list[Path] = []
    resolved = codex.resolve()
    modules = next((p for p in resolved.parents if p.name == "node_modules"), resolved.parent)
    roots.append(modules)
    node = shutil.which("node")
    if node is not None:
        prefix = Path(node).resolve().parent.parent
        if not any(str(prefix).startswith(s) for s in SYSTEM_READ_ONLY):
            roots.append(prefix)
    return roots


def _binds(option: str, paths: Iterable[Path]) -> list[str]:
    args: list[str] = []
    for path in dict.fromkeys(str(p) for p in paths):
        if os.path.exists(path):
            args += [option, path, path]
    return args


def wrap(
    bwrap: Path,
    argv: Sequence[str],
    *,
    software: Sequence[Path],
    writable: Sequence[Path],
    readable: Sequence[Path],
    cwd: Path,
) -> list[str]:
    """`argv` run inside a mount namespace holding only the given paths (and /usr, /etc)."""
    # No --new-session: Codex stays in the process group the evaluator signals and sweeps.
    args = [str(bwrap), "--die-with-parent", "--unshare-pid"]
    args += _binds("--ro-bind", map(Path, SYSTEM_READ_ONLY))
    for target, link in USR_LINKS:
        if os.path.islink(link) or not os.path.exists(link):
            args += ["--symlink", target, link]
        else:
            args += ["--ro-bind", link, link]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    args += _binds("--ro-bind", software)
    args += _binds("--ro-bind", readable)
    args += _binds("--bind", writable)
    args += ["--chdir", str(cwd), "--", *argv]
    return args


def works(bwrap: Path) -> bool:
    """Whether bwrap can build a mount namespace on this machine (user namespaces, rights)."""
    probe = wrap(bwrap, ["/usr/bin/true"], software=[], writable=[], readable=[], cwd=Path("/"))
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
