"""Materialising and fingerprinting a 20,000-file, 200 MB fixture vs `cp -a` + `sha256sum`."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import emit
from pytest_skill_eval.workspace import copy_tree


def make_tree(root: Path, files: int, total_bytes: int) -> None:
    """`files` files in nested directories, `total_bytes` of pseudo-random content in all."""
    size = total_bytes // files
    block = os.urandom(size)
    for index in range(files):
        directory = root / f"d{index % 100:02d}" / f"e{index % 7}"
        directory.mkdir(parents=True, exist_ok=True)
        # Vary the bytes so no two files share a hash.
        (directory / f"f{index}.bin").write_bytes(index.to_bytes(4, "big") + block[4:])


def _drop(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def main(files: int = 20_000, total_mb: int = 200, rounds: int = 3) -> dict[str, object]:
    """Alternate both methods `rounds` times on the same tree; report the median ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "fixture"
        make_tree(source, files, total_mb * 1024 * 1024)
        ours, theirs = [], []
        for attempt in range(rounds):
            target = Path(tmp) / f"ours{attempt}"
            start = time.perf_counter()
            copy_tree(source, target)
            ours.append(time.perf_counter() - start)
            _drop(target)
            target = Path(tmp) / f"cp{attempt}"
            start = time.perf_counter()
            subprocess.run(["cp", "-a", str(source), str(target)], check=True)
            subprocess.run(
                f"find {target} -type f -print0 | xargs -0 sha256sum > /dev/null",
                shell=True,
                check=True,
            )
            theirs.append(time.perf_counter() - start)
            _drop(target)
    ours.sort()
    theirs.sort()
    median_ours, median_theirs = ours[len(ours) // 2], theirs[len(theirs) // 2]
    return emit(
        "materialise-fingerprint",
        ratio=round(median_ours / median_theirs, 2),
        goal=1.5,
        ours_s=[round(x, 3) for x in ours],
        cp_sha256sum_s=[round(x, 3) for x in theirs],
        files=files,
        megabytes=total_mb,
    )


if __name__ == "__main__":
    main()
