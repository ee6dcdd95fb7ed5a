"""`skill-eval init`: a first suite next to a skill that `pytest` alone runs, never overwriting."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.files import write
from tests.support.paths import EXAMPLE
from tests.views.test_cli_errors import assert_one_line_error, skill_eval

SKILL = EXAMPLE / "skills" / "changelog-keeper"


def _folder_with_skill(tmp_path: Path) -> Path:
    folder = tmp_path / "skills"
    shutil.copytree(SKILL, folder / "changelog-keeper")
    return folder


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`pytest` alone (and `args`) started in `cwd`, as a user would; it must pass."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return done


@pytest.mark.pi
def test_a_fresh_scaffold_passes_under_pytest_alone_and_a_second_init_refuses(
    tmp_path: Path,
) -> None:
    folder = _folder_with_skill(tmp_path)
    done = skill_eval("init", str(folder / "changelog-keeper"))
    assert done.returncode == 0, done.stderr
    assert f"run it: cd {folder} && pytest" in done.stdout

    ran = _pytest(folder)
    assert "4 passed" in ran.stdout
    for line in ("description: the skill changed 1 of 1", "body: the skill changed 1 of 1"):
        assert line in ran.stdout

    config = (folder / "pyproject.toml").read_text(encoding="utf-8")
    again = skill_eval("init", str(folder / "changelog-keeper"))
    suite = folder / "evals" / "changelog-keeper" / "suite.json"
    assert_one_line_error(again, f"{suite} exists; init never overwrites a file")
    assert (folder / "pyproject.toml").read_text(encoding="utf-8") == config


def test_the_keys_go_under_an_existing_pytest_table(tmp_path: Path) -> None:
    folder = _folder_with_skill(tmp_path)
    existing = '[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    write(folder / "pyproject.toml", existing)
    assert skill_eval("init", str(folder / "changelog-keeper")).returncode == 0
    config = (folder / "pyproject.toml").read_text(encoding="utf-8")
    table = config.split("[tool.pytest.ini_options]\n", 1)[1]
    assert table.startswith('skill_eval_definitions = ["evals/changelog-keeper/suite.json"]\n')
    assert table.endswith('addopts = "-q"\n')
    assert config.startswith('[project]\nname = "x"\n')


def test_in_a_git_project_the_keys_go_to_its_pyproject_and_pytest_finds_them_anywhere(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write(project / "pyproject.toml", '[project]\nname = "x"\n')
    folder = _folder_with_skill(project)
    done = skill_eval("init", str(folder / "changelog-keeper"))
    assert done.returncode == 0, done.stderr
    assert f"run it: cd {project} && pytest" in done.stdout
    assert not (folder / "pyproject.toml").exists()
    config = (project / "pyproject.toml").read_text(encoding="utf-8")
    assert 'skill_eval_definitions = ["skills/evals/changelog-keeper/suite.json"]' in config
    assert 'skill_eval_root = "skills"' in config
    # From a folder below the project, pytest finds its ini file and collects the suite.
    collected = _pytest(folder / "evals", "--collect-only", "-q")
    assert "4 tests collected" in collected.stdout


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("pyproject.toml", "[tool.pytest.ini_options]\nskill_eval_definitions = []\n", "names"),
        ("pytest.ini", "[pytest]\n", "configures pytest here"),
    ],
)
def test_a_config_it_would_contradict_is_refused_before_anything_is_written(
    tmp_path: Path, name: str, content: str, needle: str
) -> None:
    folder = _folder_with_skill(tmp_path)
    write(folder / name, content)
    done = skill_eval("init", str(folder / "changelog-keeper"))
    assert_one_line_error(done, str(folder / name), needle)
    assert not (folder / "evals").exists()


def test_a_folder_without_a_skill_is_one_line(tmp_path: Path) -> None:
    done = skill_eval("init", str(tmp_path))
    assert_one_line_error(done, f"{tmp_path / 'SKILL.md'}: no such file")
