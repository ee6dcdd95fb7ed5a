"""Helpers for workspace tests: real Git repositories and small files in tmp_path."""

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


def write(path: Path, content: str | bytes, *, mode: int | None = None) -> Path:
    """Create `path` (and its parents) with the given content."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    if mode is not None:
        path.chmod(mode)
    return path
