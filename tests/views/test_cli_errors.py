"""`skill-eval` turns a failure the user can act on into one line on stderr, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


# ---------------------------------------------------------------------------------------------
# Hostile evidence: the three crashes once seen, each now one line naming the file.

DEEP = "[" * 100_000 + "]" * 100_000  # once a RecursionError in the JSON parser


def _run_record(result_dir: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    path = result_dir / "groups" / "changelog-entry" / "baseline" / "run.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    change(record)
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["view", "report", "compare", "verify", "merge"])
def test_deeply_nested_json_is_one_line_naming_the_file(
    result_dir: Path, tmp_path: Path, command: str
) -> None:
    names = {"view": "summary.json", "report": "groups/changelog-entry/baseline/run.json"}
    names |= {"compare": "summary.json", "verify": "groups/natural-activation/manifest.json"}
    if command == "merge":
        damaged = tmp_path / "plan.json"  # a merge reads its plan first, through the reader
        argv = ["merge", str(damaged), str(tmp_path)]
    else:
        damaged = result_dir / names[command]
        argv = {
            "view": ["view", str(result_dir)],
            "report": ["report", str(result_dir), "--html", str(tmp_path / "out.html")],
            "compare": ["compare", str(result_dir), str(result_dir)],
            "verify": ["verify", str(result_dir)],
        }[command]
    damaged.write_text(DEEP, encoding="utf-8")
    done = skill_eval(*argv)
    assert_one_line_error(done, f"{damaged}: nested deeper than 100 levels")
    assert done.returncode == 2


@pytest.mark.parametrize(
    ("command", "change", "where"),
    [
        # Once a TypeError: len() of the count of parse errors.
        ("view", lambda r: r["process"].update(parseErrors=5), "/process/parseErrors"),
        # Once an AttributeError: a tool call that is not an object.
        ("report", lambda r: r["turns"][0].update(toolActivity=["x"]), "/turns/0/toolActivity/0"),
        ("view", lambda r: r.update(turns="x"), "/turns"),
        ("report", lambda r: r["effects"].update(changes={"created": 5}), "/effects/changes"),
    ],
)
def test_a_field_of_the_wrong_type_is_one_line_naming_file_and_field(
    result_dir: Path,
    tmp_path: Path,
    command: str,
    change: Callable[[dict[str, Any]], None],
    where: str,
) -> None:
    path = _run_record(result_dir, change)
    argv = [command, str(result_dir)]
    if command == "report":
        argv += ["--html", str(tmp_path / "out.html")]
    done = skill_eval(*argv)
    assert_one_line_error(done, f"{path}: at {where}")
    assert done.returncode == 2
    assert done.stdout == ""


def test_verify_names_a_workspace_path_longer_than_path_max(result_dir: Path) -> None:
    workspace = result_dir / "groups" / "changelog-entry" / "baseline" / "workspace"
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(20):  # 20 × 251 bytes below the workspace: past PATH_MAX (4096)
        os.mkdir("d" * 250, dir_fd=fd)
        inner = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    done = skill_eval("verify", str(result_dir))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    # The directories that can still be listed are extra; the one beyond them, unreadable.
    lines = done.stdout.splitlines()
    (line,) = [text for text in lines if text.startswith("unreadable: ")]
    assert f"extra: {workspace}/{'d' * 250}/ (a directory)" in lines
    assert all(text.endswith("/ (a directory)") for text in lines if text != line)
    assert line.startswith(f"unreadable: {workspace}/{'d' * 250}/")
    assert line.endswith("(File name too long)")
