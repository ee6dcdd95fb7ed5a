"""The pytest glue cleans up after itself and loads without pytest-xdist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skill_eval.session import SESSION_KEY


def test_unconfigure_unregisters_the_session_and_drops_its_key(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    recorder = pytester.inline_run(
        "--collect-only",
        "-p",
        "no:cacheprovider",
        "--skill-eval",
        str(example_root / "suite.json"),
        "--skill-eval-root",
        str(example_root),
    )
    assert recorder.ret == 0
    (call,) = recorder.getcalls("pytest_unconfigure")
    config: pytest.Config = call.config
    assert SESSION_KEY not in config.stash
    assert config.pluginmanager.get_plugin("skill-eval-session") is None
    assert config.pluginmanager.get_plugin("skill-eval-subresults") is None


def test_the_plugin_loads_and_collects_without_xdist(example_root: Path) -> None:
    # A finder that refuses xdist makes every import of it fail, as if it were not installed.
    code = (
        "import sys\n"
        "class NoXdist:\n"
        "    @staticmethod\n"
        "    def find_spec(name, path=None, target=None):\n"
        "        if name == 'xdist' or name.startswith('xdist.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, NoXdist)\n"
        "import pytest\n"
        "sys.exit(pytest.main(sys.argv[1:]))\n"
    )
    done = _collect_in_python(
        code,
        example_root,
        "-p",
        "pytest_skill_eval.plugin",
        # Entry-point plugins (xdist among them) are not loaded; the plugin is named with -p.
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "natural-activation[baseline]" in done.stdout


def test_a_session_freezes_the_heap_only_as_its_process_exits(example_root: Path) -> None:
    # An exit handler registered before the session runs after the plugin's (last in, first
    # out): it sees whether the interpreter's last collection will traverse the heap.
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('at exit, frozen:', gc.get_freeze_count() > 0))\n"
        "import pytest\n"
        "for _ in range(2):\n"
        "    assert pytest.main(sys.argv[1:]) == 0\n"
        "    print('after a session, frozen:', gc.get_freeze_count() > 0)\n"
    )
    done = _collect_in_python(code, example_root)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if "frozen:" in line]
    # A process that runs pytest again keeps its collector as it was.
    assert lines == [
        "after a session, frozen: False",
        "after a session, frozen: False",
        "at exit, frozen: True",
    ]


def _collect_in_python(
    code: str, example_root: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -c code` given pytest's arguments that collect the example suite only."""
    args = ["-p", "no:cacheprovider", "--collect-only", "-q", "--skill-eval"]
    args += [str(example_root / "suite.json"), "--skill-eval-root", str(example_root)]
    return subprocess.run(
        [sys.executable, "-c", code, *extra, *args],
        cwd=example_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
