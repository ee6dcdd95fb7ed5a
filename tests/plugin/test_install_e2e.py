"""Installed from its wheel into a project of its own: hosts and Node found in the project.

The wheel is built from this tree and installed into a fresh virtual environment (its
dependencies from the running one, nothing from a package index); the pinned npm packages sit
at the project's root, beside its `pyproject.toml`, and the definitions in `evals/`. `pytest`
started in `evals/` with no option at all finds Pi and the pinned Node in the project.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import runs
from tests.support.files import read_json, write
from tests.support.paths import EXAMPLE, REPO

pytestmark = pytest.mark.pi

PYPROJECT = """\
[tool.pytest.ini_options]
skill_eval_definitions = ["evals/suite.json"]
skill_eval_root = "evals"
skill_eval_cassettes = "evals/scripts"
"""


def _run(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `argv`; in `cwd` (the project) without this tree on PYTHONPATH: only the installed
    package, and none of the outer run's pytest variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    if cwd is not None:
        env.pop("PYTHONPATH", None)
        # Its own cache: the installed copy builds a Pi bundle of its own, kept with the test.
        env["XDG_CACHE_HOME"] = str(cwd.parent / "cache")
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def _installed_venv(tmp_path: Path) -> Path:
    """A fresh virtual environment holding the wheel built from this tree (offline)."""
    if importlib.util.find_spec("hatchling") is None:
        if os.environ.get("CI"):
            pytest.fail("hatchling is not installed; the dev extra installs it")
        pytest.skip("hatchling is not installed (pip install -e '.[dev]' installs it)")
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run(*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, REPO)
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    wheel = next(wheels.glob("pytest_skill_eval-*.whl"))
    _run(*pip, "--python", python, "install", "--no-deps", "--no-index", wheel)
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    # Its dependencies are the running environment's, after its own site-packages.
    write(Path(purelib.stdout.strip()) / "dependencies.pth", "\n".join(site.getsitepackages()))
    return venv


def test_an_installed_wheel_runs_a_suite_from_a_subfolder_of_the_project(tmp_path: Path) -> None:
    venv = _installed_venv(tmp_path)
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project / "evals", ignore=shutil.ignore_patterns(".skill-eval"))
    write(project / "pyproject.toml", PYPROJECT)
    (project / "node_modules").symlink_to(REPO / "node_modules")  # `npm install` at the root
    evals, python = project / "evals", venv / "bin" / "python"

    where = _run(
        python, "-c", "import pytest_skill_eval; print(pytest_skill_eval.__file__)", cwd=evals
    )
    assert Path(where.stdout.strip()).is_relative_to(venv)  # the wheel's copy, not this tree
    done = _run(python, "-m", "pytest", "-p", "no:cacheprovider", cwd=evals)
    assert "4 passed" in done.stdout
    run = runs.run_record(evals, "natural-activation", "candidate")
    assert run["binary"]["version"] == "0.73.1"
    assert run["binary"]["runtime"]["kind"] == "pinned"
    # The console script is installed beside the interpreter and finds the result.
    viewed = _run(venv / "bin" / "skill-eval", "view", "latest", cwd=evals)
    assert "natural-activation" in viewed.stdout
    assert read_json(runs.result_dir(evals) / "summary.json")["state"] == "complete"
