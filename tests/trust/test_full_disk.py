"""A full results disk is one clear line naming the directory: no traceback, no hang."""

from __future__ import annotations

import errno
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_skill_eval.errors import DiskFullError, EvidenceError
from pytest_skill_eval.evidence import atomic_write, create_result_dir, store, write_once
from tests.support.roots import body_group, make_root, write_answer
from tests.support.runs import skill_eval_args

GROUPS = ("alpha", "beta")


def _no_space(code: int) -> object:
    def fail(tmp: Path, data: bytes) -> None:
        tmp.write_bytes(data[: len(data) // 2])  # a partly written temporary, as a full disk
        raise OSError(code, os.strerror(code))

    return fail


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT], ids=["ENOSPC", "EDQUOT"])
def test_a_write_on_a_full_disk_names_the_directory_and_leaves_nothing_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    monkeypatch.setattr(store, "_write_synced", _no_space(code))
    target = tmp_path / "group" / "run.json"
    with pytest.raises(DiskFullError) as caught:
        write_once(target, b'{"state": "complete"}\n')
    message = str(caught.value)
    assert "\n" not in message
    assert f"the results disk is full: cannot write run.json in {target.parent}" in message
    assert isinstance(caught.value, EvidenceError)
    with pytest.raises(DiskFullError, match=r"ledger\.json"):
        atomic_write(tmp_path / "ledger.json", b"{}")
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []


def test_a_result_directory_that_cannot_be_created_is_a_disk_full_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "mkdir", full)
    with pytest.raises(DiskFullError, match=re.escape(f"in {tmp_path / 'runs'}")):
        create_result_dir(tmp_path / "runs")


def test_other_write_failures_stay_plain_evidence_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "_write_synced", _no_space(errno.EIO))
    with pytest.raises(EvidenceError) as caught:
        write_once(tmp_path / "run.json", b"{}")
    assert not isinstance(caught.value, DiskFullError)


@pytest.fixture
def small_volume(tmp_path: Path) -> Iterator[Path]:
    """A 100 KiB tmpfs (root only); unmounted afterwards."""
    volume = tmp_path / "volume"
    volume.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=100k", "tmpfs", str(volume)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode(errors='replace')}")
    try:
        yield volume
    finally:
        subprocess.run(["umount", str(volume)], check=False)


def _fill(volume: Path, leave_kib: int) -> None:
    """Fill the volume until about `leave_kib` KiB are free."""
    stats = os.statvfs(volume)
    free = stats.f_bavail * stats.f_frsize
    (volume / "filler").write_bytes(b"\0" * max(0, free - leave_kib * 1024))


def _run(pytester: pytest.Pytester, results: Path) -> tuple[pytest.RunResult, str]:
    root = pytester.path / "root"
    scripts = {f"{g}/{v}": write_answer("yes") for g in GROUPS for v in ("baseline", "candidate")}
    make_root(root, [body_group(g) for g in GROUPS], scripts)
    # The timeout only guards against the hang this test is about.
    done = pytester.runpytest_subprocess(
        *skill_eval_args(root, "--skill-eval-results", str(results)), timeout=300
    )
    output = "\n".join(done.outlines + done.errlines)
    assert "Traceback" not in output
    assert "INTERNALERROR" not in output
    return done, output


@pytest.mark.pi
def test_a_disk_full_before_the_run_is_one_usage_error(
    pytester: pytest.Pytester, small_volume: Path
) -> None:
    _fill(small_volume, 0)
    done, output = _run(pytester, small_volume / "runs")
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in output.splitlines() if "disk is full" in line]
    assert len(lines) == 1, output
    assert lines[0].startswith("ERROR: the results disk is full: cannot write invocation.json in ")
    assert str(small_volume / "runs") in lines[0]


@pytest.mark.pi
def test_a_disk_that_fills_during_the_run_stops_it_with_one_error(
    pytester: pytest.Pytester, small_volume: Path
) -> None:
    # Room for the invocation and the first subject's start, not for its records.
    _fill(small_volume, 20)
    done, output = _run(pytester, small_volume / "runs")
    assert done.ret != pytest.ExitCode.OK
    errors = [line for line in output.splitlines() if line.startswith("the results disk is full")]
    assert len(errors) == 1, output
    (result,) = (small_volume / "runs").iterdir()
    assert str(result) in errors[0]
    # Unfinished, and never presented as whole: no summary, no seal.
    assert not (result / "summary.json").exists()
    assert not (result / "seal.json").exists()
    assert not list(result.rglob(".*.tmp"))
