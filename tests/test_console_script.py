"""`skill-eval` loads only the command it runs: `--help` imports no layer, a command its own."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from importlib import metadata
from importlib.util import resolve_name
from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import COMMANDS, main
from tests.support.imports import own

# Runs the console script's entry with the given arguments, then prints every module imported.
PROBE = """
import json, sys
from pytest_skill_eval.commands.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""

# What parsing the command line needs, whatever the command.
ENTRY = {"pytest_skill_eval", "pytest_skill_eval.commands", "pytest_skill_eval.commands.cli"}
ENTRY |= {"pytest_skill_eval.errors"}


def _imported(tmp_path: Path, *argv: str) -> set[str]:
    """The plugin's modules and dependencies that `skill-eval ARGV` imported."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return own(set(json.loads(done.stdout.splitlines()[-1])))


def test_help_imports_no_layer_and_no_dependency(tmp_path: Path) -> None:
    assert _imported(tmp_path, "--help") == ENTRY


# The commands whose module another's uses: `import` writes its suites with `init`'s helpers.
USES = {"import": ("init",)}


def _home(command: str) -> str:
    """The full name of the module that declares and runs `command`."""
    return resolve_name(COMMANDS[command][0], "pytest_skill_eval.commands")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_imports_its_own_module_and_no_other_commands(
    tmp_path: Path, command: str
) -> None:
    imported = _imported(tmp_path, command, "--help")
    assert imported >= ENTRY | {_home(command)}
    others = {_home(other) for other in COMMANDS} - {_home(command)}
    others -= {_home(used) for used in USES.get(command, ())}
    assert imported & others == set()


@pytest.mark.parametrize("spelling", [["--root"], ["--ro"], ["--r"]])
def test_the_command_is_found_past_the_definition_root_however_spelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: list[str]
) -> None:
    root = tmp_path / "view"  # named as a command: still the root
    root.mkdir()
    assert main([*spelling, str(root), "view", "latest"]) == 2
    assert f"no finished result in {root / '.skill-eval' / 'runs'}" in capsys.readouterr().err


def test_the_version_goes_to_stderr_when_stdout_is_closed(tmp_path: Path) -> None:
    done = subprocess.run(
        f"{shlex.quote(sys.executable)} -m pytest_skill_eval.commands.cli --version >&-",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"skill-eval {metadata.version('pytest-skill-eval')}\n"
