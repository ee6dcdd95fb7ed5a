"""One lookup of an earlier result, for the plugin's options and the console script: a path, an
id under the results directories from where the command runs, `latest` and `previous`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.errors import ResultNotFoundError
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.evidence.locate import Looked, find_result, resolve_result
from pytest_skill_eval.run.loop import ResultOptionError, resolve
from tests.support.files import write


def _result(runs: Path, name: str, *, finished: bool = True) -> Path:
    write(runs / name / layout.INVOCATION, "{}")
    if finished:
        write(runs / name / layout.SUMMARY, "{}")
    return runs / name


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "pytest.ini", "[pytest]\n")
    return tmp_path


def test_an_id_is_found_from_a_folder_below_the_project_by_both(project: Path) -> None:
    runs = layout.runs_dir(project)
    older = _result(runs, "20261201000000-aaaaaaaa")
    newer = _result(runs, "20261202000000-bbbbbbbb")
    below = project / "skills" / "one"
    below.mkdir(parents=True)
    elsewhere = below / ".skill-eval" / "runs"  # the option's own directory: none there yet
    assert resolve("--opt", older.name, elsewhere, below) == older
    assert resolve_result(older.name, below / "nowhere", start=below) == older
    assert find_result("latest", elsewhere, below) == newer
    assert find_result("previous", elsewhere, below) == older
    assert find_result(f"../../.skill-eval/runs/{older.name}", elsewhere, below) == older


def test_what_counts_as_a_result_is_the_callers(project: Path) -> None:
    runs = layout.runs_dir(project)
    _result(runs, "20261201000000-aaaaaaaa")
    (runs / "notes").mkdir()  # a directory, not a result
    assert find_result("notes", runs, project) == runs / "notes"
    with pytest.raises(ResultOptionError, match=r"--opt notes: no such result \(looked in "):
        resolve("--opt", "notes", runs, project)


def test_nothing_found_says_where_it_looked(project: Path) -> None:
    runs = layout.runs_dir(project)
    # Where results live is named even before there is any.
    assert find_result("nosuch", runs, project) == Looked(False, [runs / "nosuch"])
    assert find_result("latest", runs, project) == Looked(True, [runs])
    _result(runs, "20261201000000-aaaaaaaa")
    assert find_result("previous", runs, project) == Looked(True, [runs])
    assert find_result("nosuch", runs, project, beside=project) == Looked(
        False, [runs / "nosuch", project / "nosuch"]
    )
    with pytest.raises(ResultNotFoundError, match=r"previous \(no two finished"):
        resolve_result("previous", project, start=project)
    with pytest.raises(ResultOptionError, match="--opt previous: fewer than two finished results"):
        resolve("--opt", "previous", runs, project)
