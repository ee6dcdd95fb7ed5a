"""`--skill-eval-reuse` and `--skill-eval-affected-since` given a result that cannot serve:
one line naming the option and the fix before anything runs, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.roots import unscripted_root
from tests.support.runs import refusal, run
from tests.views.conftest import build_result


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return unscripted_root(tmp_path / "root")


@pytest.mark.parametrize("option", ["--skill-eval-reuse", "--skill-eval-affected-since"])
def test_a_result_that_is_not_there_is_one_line(
    pytester: pytest.Pytester, root: Path, option: str
) -> None:
    line = refusal(run(pytester, root, option, "20990101000000-nosuch"))
    assert line.startswith(f"ERROR: {option} 20990101000000-nosuch: no such result (looked in ")
    assert line.endswith("pass a result id a run printed, latest, or a result directory")


def test_latest_without_a_finished_result_says_to_run_once_first(
    pytester: pytest.Pytester, root: Path
) -> None:
    line = refusal(run(pytester, root, "--skill-eval-reuse", "latest"))
    assert line.startswith("ERROR: --skill-eval-reuse latest: no finished result in ")


def test_affected_since_a_result_whose_seal_fails_is_refused(
    pytester: pytest.Pytester, root: Path, tmp_path: Path
) -> None:
    result = build_result(tmp_path / "earlier")
    (result / "summary.json").write_text("{}", encoding="utf-8")
    line = refusal(run(pytester, root, "--skill-eval-affected-since", str(result)))
    prefix = f"ERROR: --skill-eval-affected-since {result}: {result.name}: its seal does not "
    assert line.startswith(prefix)
    assert line.endswith("pass a sealed result that verifies (skill-eval verify)")


def test_help_describes_both_options(pytester: pytest.Pytester) -> None:
    out = pytester.runpytest_subprocess("--help").stdout.str()
    assert "--skill-eval-reuse=RESULT" in out
    assert "--skill-eval-affected-since=RESULT" in out
