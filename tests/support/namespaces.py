"""Namespaces for one child process only: /etc with a test's files laid over it (a private
mount namespace with an overlay), or a network with nothing but loopback.

The child sees the real /etc with a test's directory laid over it (overlayfs); the real /etc,
and every other process, never sees what the test planted.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

# Mount the overlay over /etc inside the new namespace, then become the command.
_OVERLAY = 'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc && shift 2'


def with_layered_etc(upper: Path, command: Sequence[str]) -> list[str]:
    """`command` run where /etc is the real one with `upper`'s files laid over it.

    Skips the test where a private mount namespace with an overlay cannot be made (not root,
    no `unshare`, no overlayfs)."""
    __tracebackhide__ = True
    work = upper.parent / f"{upper.name}-overlay-work"
    upper.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) for a private mount namespace")
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c"]
    probe = subprocess.run(
        [*prefix, f"{_OVERLAY} && test -d /etc", "sh", str(upper), str(work)],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot lay an overlay over /etc here: {probe.stderr!r}")
    return [*prefix, f'{_OVERLAY} && exec "$@"', "sh", str(upper), str(work), *command]


def loopback_only_available() -> bool:
    """`unshare -rn` gives a network namespace with only loopback (up) on this machine."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = ["unshare", "-rn", "sh", "-c", "ip link set lo up"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def loopback_only(command: Sequence[str]) -> list[str]:
    """`command` run in a new network namespace where only loopback exists: any other connection
    attempt fails."""
    return ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
