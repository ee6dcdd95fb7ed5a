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


@pytest.mark.pi
def test_a_fresh_scaffold_passes_under_pytest_alone_and_a_second_init_refuses(
    tmp_path: Path,
) -> None:
    folder = _folder_with_skill(tmp_path)
    done = skill_eval("init", str(folder / "changelog-keeper"))
    assert done.returncode == 0, done.stderr
    assert f"run it: cd {folder} && pytest" in done.stdout

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
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
