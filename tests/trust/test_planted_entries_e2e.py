"""A subject plants a FIFO or an undecodable file name through a declared command: the run
finishes and every record of the result holds what was planted."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest

from pytest_skill_eval.evidence import verify_group
from tests.support.files import read_json, write
from tests.support.roots import Group, build, skill, variant
from tests.support.runs import popen, result_dir, skill_eval_args

pytestmark = pytest.mark.pi

HANG_GUARD_S = 180.0  # a regression blocks forever; this turns it into a failure
BAD = b"bad\xff.txt"


def _planting_group(command: list[str]) -> Group:
    return Group(
        id="planted",
        turns=["Prepare the workspace."],
        tools=["read", "run_command"],
        candidate=variant([], None),
        commands=[{"id": "plant", "argv": command}],
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "plant"}}]},
                {"text": "Done."},
            ]
        },
    )


def _run(pytester: pytest.Pytester, group: Group) -> tuple[int, str, Path]:
    root = pytester.path / "root"
    write(root / "fixture" / "README.md", "A task.\n")
    skill(root, "unused")
    suite = build(root, [group])
    child = popen(pytester, skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite))
    try:
        out, _ = child.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        child.kill()
        out, _ = child.communicate()
        pytest.fail(f"pytest hung on what the subject planted:\n{out.decode(errors='replace')}")
    return child.returncode, out.decode("utf-8", errors="replace"), result_dir(root)


def test_a_fifo_the_subject_makes_is_recorded_and_the_run_finishes(
    pytester: pytest.Pytester,
) -> None:
    returncode, out, result = _run(pytester, _planting_group(["mkfifo", "trap"]))

    assert returncode == 0, out
    variant_dir = result / "groups" / "planted" / "candidate"
    run = read_json(variant_dir / "run.json")
    assert run["state"] == "complete", run["error"]
    after = {f["path"]: f["type"] for f in run["effects"]["after"]}
    assert after["trap"] == "fifo"
    assert run["effects"]["changes"]["created"] == ["trap"]
    manifest = read_json(result / "groups" / "planted" / "manifest.json")
    assert manifest["files"]["candidate/workspace/trap"] == "fifo"
    assert verify_group(result / "groups" / "planted") == []
    assert (result / "summary.json").is_file()


def test_an_undecodable_file_name_loses_nothing_of_the_result(
    pytester: pytest.Pytester,
) -> None:
    script = f"open({BAD!r}, 'wb').write(b'x')"
    returncode, out, result = _run(pytester, _planting_group(["python3", "-c", script]))

    assert returncode == 0, out
    assert "Traceback" not in out, out
    assert "UnicodeEncodeError" not in out, out
    group_dir = result / "groups" / "planted"
    run = read_json(group_dir / "candidate" / "run.json")
    assert run["state"] == "complete", run["error"]
    encoded = base64.b64encode(BAD).decode("ascii")
    entry = next(f for f in run["effects"]["after"] if f.get("path_b64"))
    assert entry == {
        "path": "bad%FF.txt",
        "type": "file",
        "sha256": entry["sha256"],
        "path_b64": encoded,
    }
    assert run["effects"]["changes"] == {
        "created": ["bad%FF.txt"],
        "modified": [],
        "deleted": [],
        "path_b64": {"bad%FF.txt": encoded},
    }
    manifest = read_json(group_dir / "manifest.json")
    assert manifest["path_b64"]["candidate/workspace/bad%FF.txt"] == base64.b64encode(
        b"candidate/workspace/" + BAD
    ).decode("ascii")
    assert verify_group(group_dir) == []
    assert (result / "summary.json").is_file()
    workspace = os.fsencode(run["workspace"])
    assert os.path.isfile(os.path.join(workspace, BAD))
