"""Counts read right ("1 check", never "1 checks" or "(s)"), and the CLI tells its version."""

from __future__ import annotations

from importlib import metadata
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_skill_eval.commands import cli
from pytest_skill_eval.common.wording import counted
from pytest_skill_eval.subresults import name_check_counts


def test_counted_nouns_agree_with_their_count() -> None:
    assert [counted(n, "check") for n in (0, 1, 2)] == ["0 checks", "1 check", "2 checks"]
    assert counted(1, "difference") == "1 difference"
    assert counted(3, "entry") == "3 entries"


def test_pytest_summary_names_a_single_check_in_the_singular() -> None:
    stats: dict[str, list[Any]] = {
        "passed": [1, 2],
        "checks unavailable": [1],
        "checks passed": [1, 2],
        "checks failed": [1],
    }
    reporter = SimpleNamespace(stats=stats, _known_types=["checks unavailable"])
    name_check_counts(reporter)
    assert reporter._known_types is None  # listed again from the renamed categories
    assert list(stats) == ["passed", "check unavailable", "checks passed", "check failed"]
    assert stats["checks passed"] == [1, 2]


def test_the_cli_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"skill-eval {metadata.version('pytest-skill-eval')}\n"
