"""A full results disk is one clear line naming the directory: no traceback, no hang."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.commands import cli
from pytest_skill_eval.errors import DiskFullError, EvidenceError
from pytest_skill_eval.evidence import atomic_write, create_result_dir, store, write_once
from pytest_skill_eval.evidence.store import verify_group
from tests.support.roots import body_group, make_root, on_fast_host, write_answer
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


# The observed scenario, scaled down: a 512 KiB results volume, a subject that writes 250 kB
# into its workspace and answers 125 kB of text (observed: 3 MB and 1 MB; Pi's CPU grows faster
# than what it streams in one piece: 18 s for 1 MB and 0.5 MB), and a 20 s no-progress watchdog.
# The disk fills at the same write as at four times the size: the baseline's events.
_IN_PRIVATE_VOLUME = """
volume=$1; copy=$2; shift 2
mount -t tmpfs -o size=512k tmpfs "$volume" || exit 97
"$@"; code=$?
cp -a "$volume/." "$copy/"
exit $code
"""


ANSWER = "y" * 125_000


def _filling_script() -> list[dict[str, Any]]:
    write = {"name": "write", "arguments": {"path": "big.txt", "content": "x" * 250_000}}
    return [{"response": {"tool_calls": [write]}}, {"response": {"text": ANSWER}}]


def _whole(path: Path) -> bool:
    """Whether an evidence file the evaluator wrote reads back whole (JSON parses, lines end)."""
    data = path.read_bytes()
    try:
        if path.suffix == ".json":
            json.loads(data)
        elif path.suffix == ".jsonl":
            assert data == b"" or data.endswith(b"\n")
            for line in data.splitlines():
                json.loads(line)
    except (ValueError, AssertionError):
        return False
    return True


@pytest.mark.pi
@pytest.mark.parametrize(
    "extra",
    # Pi as observed; and Codex under xdist, whose controller must not report it a second time.
    [(), ("-n", "2")],
    ids=["pi", "codex-xdist"],
)
def test_a_subject_that_fills_the_results_disk_ends_the_run_with_one_line(
    pytester: pytest.Pytester, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a private tmpfs needs root and unshare (util-linux)")
    root = pytester.path / "root"
    scripts = {f"alpha/{v}": _filling_script() for v in ("baseline", "candidate")}
    make_root(root, [body_group("alpha", **(on_fast_host() if extra else {}))], scripts)
    volume, copy = tmp_path / "volume", tmp_path / "copy"
    volume.mkdir()
    copy.mkdir()
    runs = volume / "runs"
    args = skill_eval_args(
        root, "--skill-eval-results", str(runs), "--skill-eval-no-progress-timeout", "20", *extra
    )
    command = [sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(root)]
    command += [f"--basetemp={tmp_path / 'basetemp'}", *args]  # not pytest's shared root
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # The volume lives in a mount namespace of its own: it is gone when the run ends (its
    # contents are copied out first) and never fills, nor shows on, this machine's disks.
    private = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _IN_PRIVATE_VOLUME]
    child = subprocess.Popen(
        [*private, "sh", str(volume), str(copy), *command],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        # Only a guard against the hang this test is about, never a measure of speed.
        output, _ = child.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        pytest.fail("pytest was still running 300 s after a subject filled the results disk")
    assert child.returncode not in (0, 97), output
    assert "Traceback" not in output
    assert "INTERNALERROR" not in output
    # pytest's short summary repeats each failure after `FAILED <item> - ` (whole on CI).
    lines = [line for line in output.splitlines() if not line.startswith("FAILED ")]
    named = [line for line in lines if str(runs) in line and "disk is full" in line]
    assert len(named) == 1, output
    assert named[0].startswith("the results disk is full: cannot write "), named[0]
    (result,) = (copy / "runs").iterdir()
    full_dir = named[0].split(" in ", 1)[1].split(" (", 1)[0]
    assert full_dir.startswith(str(runs / result.name)), named[0]
    # Unfinished: no summary, no seal, no temporary left behind.
    assert not (result / "summary.json").exists()
    assert not (result / "seal.json").exists()
    assert not list(result.rglob(".*.tmp"))
    # What a manifest lists is intact; every other file the evaluator wrote is whole or is
    # named for what it is (a cut-off stream ends in `.partial`).
    for manifest in result.rglob("manifest.json"):
        assert verify_group(manifest.parent) == [], manifest
    for path in result.rglob("*"):
        if path.is_file() and "workspace" not in path.relative_to(result).parts:
            assert path.name.endswith(".partial") or _whole(path), path
    final = list(result.rglob("final.md"))
    assert all(f.read_text() == ANSWER + "\n" for f in final), final
    # `skill-eval verify` says the result is unfinished, in one statement.
    verified = subprocess.run(
        [str(Path(sys.executable).parent / "skill-eval"), "verify", str(result)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode != 0
    said = (verified.stdout + verified.stderr).strip()
    assert said.startswith(f"incomplete: {result}"), said
    assert "\n" not in said


def test_verify_says_a_result_never_finished_is_incomplete_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What a full disk leaves: an invocation and a group without its manifest, no summary, no
    # seal. That is no list of differences to look into: the result is not whole.
    _, result = create_result_dir(tmp_path / "runs")
    write_once(result / "invocation.json", b"{}\n")
    write_once(result / "groups" / "alpha" / "baseline" / "events.jsonl.partial", b'{"type"')
    assert cli.main(["verify", str(result)]) == 1
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith(f"incomplete: {result} was never finished (no summary.json, no seal")
    assert out.count("\n") == 1
    assert "difference" not in out
