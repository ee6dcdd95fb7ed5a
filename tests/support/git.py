"""Real Git repositories for workspace tests, with a fixed identity and no signing."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

GIT_CONFIG = [
    "-c",
    "user.name=Test Author",
    "-c",
    "user.email=author@example.invalid",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "tag.gpgsign=false",
    "-c",
    "init.defaultBranch=main",
]

Git = Callable[..., str]


def run_git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    """Run git in `repo` with a fixed identity; return stdout (raises on failure)."""
    __tracebackhide__ = True
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    result = subprocess.run(
        ["git", *GIT_CONFIG, "-C", str(repo), *args],
        input=stdin,
        capture_output=True,
        env=env,
        check=True,
    )
    output: bytes = result.stdout
    return output.decode("utf-8").strip()
