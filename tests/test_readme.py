"""The README's two set-up commands are exactly what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _setup_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section, flags=re.DOTALL)


def test_the_readme_shows_exactly_two_setup_commands_and_ci_runs_both() -> None:
    commands = _setup_commands()
    assert len(commands) == 2
    example, tests = commands
    assert "--skill-eval example_suites/" in example
    assert "--skill-eval-cassettes" in example  # offline, through the scripted model
    assert "pytest -n 2" in tests
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    for command in commands:
        assert "\n" not in command
        assert command in ci, command
