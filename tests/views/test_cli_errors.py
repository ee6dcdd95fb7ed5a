"""`skill-eval` turns a failure the user can act on into one line on stderr, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "skill-eval"


def skill_eval(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run the installed console script, as a user would."""
    __tracebackhide__ = True
    assert SCRIPT.is_file(), f"console script not installed: {SCRIPT}"
    return subprocess.run(
        [str(SCRIPT), *argv], capture_output=True, text=True, timeout=120, check=False
    )


def assert_one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Non-zero exit, a single `skill-eval: …` line on stderr naming `needles`, no traceback."""
    __tracebackhide__ = True
    assert done.returncode != 0, done
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("skill-eval: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_report_to_an_unwritable_path_is_one_line(result_dir: Path, tmp_path: Path) -> None:
    # A regular file where a directory should be fails for every user, root included.
    blocker = tmp_path / "blocker"
    blocker.write_text("", encoding="utf-8")
    out = blocker / "x.html"
    done = skill_eval("report", str(result_dir), "--html", str(out))
    assert_one_line_error(done, str(out))
    assert done.stdout == ""


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b'{"schema_version": 1}\n', id="no-files"),
        pytest.param(b'{"schema_version": 1, "files": [1]}\n', id="files-not-an-object"),
        pytest.param(b"\xff\xfe", id="not-utf8"),
    ],
)
def test_verify_with_a_damaged_manifest_is_one_line(result_dir: Path, manifest: bytes) -> None:
    group_dir = sorted((result_dir / "groups").iterdir())[0]
    (group_dir / "manifest.json").write_bytes(manifest)
    done = skill_eval("verify", str(result_dir))
    assert_one_line_error(done, str(group_dir / "manifest.json"))
    assert done.stdout == ""


def test_unknown_result_keeps_exit_code_2(tmp_path: Path) -> None:
    done = skill_eval("--root", str(tmp_path), "view", "no-such-result")
    assert_one_line_error(done, "Cannot find result: no-such-result")
    assert done.returncode == 2
