"""The significance gate's decision, shown the same everywhere (real scripted runs).

A rejected comparison is a failing JUnit test case counted in pytest's final line, and it leads
the terminal's bottom line, the CI job page's Markdown summary and the HTML report, with both
trial counts (this run's and the pooled ones) and the results it pooled. A gate that passes
says so in one line: what it tested, over how many trials, at which alpha.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import main as cli_main
from tests.support.roots import answers_root
from tests.support.runs import aggregates, results, run

pytestmark = [pytest.mark.pi, pytest.mark.codex]

GATE = ("--skill-eval-fail-on", "significant-regression")
# Seven pass-to-fail pairs: the always-valid sequential p-value is 2^7 / C(14, 7) = 0.0373.
FAILED = (
    "significant-regression gate FAILED at alpha 0.05: regresses/says-yes regressed "
    "(pass-to-fail 7, fail-to-pass 0, Holm-adjusted p=0.0373, 7 trials pooled from 7 results "
    "(this run's 7))"
)
PASSED = (
    "significant-regression gate passed: 1 comparison tested, none regressed beyond chance "
    "(Holm at alpha 0.05, 1 trial pooled from 1 result (this run's 1))"
)


def _root(tmp_path: Path, candidate: str) -> Path:
    return answers_root(
        tmp_path / "root", {"regresses/baseline": "yes", "regresses/candidate": candidate}
    )


def _report(target: Path, out: Path) -> str:
    assert cli_main(["report", str(target), "--html", str(out)]) == 0
    return out.read_text(encoding="utf-8")


@dataclass(frozen=True)
class Gated:
    """A gated run: its root, what pytest said, its JUnit suite and the CI job's summary."""

    root: Path
    done: pytest.RunResult
    suite: ET.Element
    summary: str


def _gated(
    pytester: pytest.Pytester,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    candidate: str,
    ret: int,
    *extra: str,
) -> Gated:
    """The gate on a root whose candidate answers `candidate`; pytest must exit `ret`."""
    root = _root(tmp_path, candidate)
    step_summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    junit = tmp_path / "junit.xml"
    done = run(pytester, root, *GATE, *extra, f"--junitxml={junit}")
    assert done.ret == ret, done.stdout.str()
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    return Gated(root, done, suite, step_summary.read_text(encoding="utf-8"))


def test_a_rejected_comparison_fails_everywhere_it_is_shown(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gated = _gated(pytester, tmp_path, monkeypatch, "no", 1, "--skill-eval-trials", "7")
    lines = gated.done.stdout.lines
    # The bottom line leads with the gate; pytest's final line counts it as failed.
    bottom = next(i for i, line in enumerate(lines) if "bottom line" in line and "---" in line)
    assert lines[bottom + 1] == FAILED
    assert "1 failed" in lines[-1], lines[-1]
    # JUnit: a failing test case naming the comparison, both counts and the pool.
    assert gated.suite.get("failures") == "1"
    cases = [c for c in gated.suite.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in cases] == ["significance-gate[regresses/says-yes]"]
    failure = cases[0].find("failure")
    assert failure is not None
    text = failure.get("message", "") + (failure.text or "")
    assert "pass-to-fail 7" in text
    assert "this run's 7" in text
    assert "pooled 7 results:" in text
    # The CI job page's summary leads with it, and the HTML report does too.
    first = gated.summary.split("**Bottom line**", 1)[1].strip().splitlines()[0]
    assert first.startswith("- **significance gate**: significant-regression gate FAILED")
    html = _report(aggregates(gated.root)[-1], tmp_path / "report.html")
    assert 'class="gate gate-failed"' in html
    assert html.index("gate-failed") < html.index("Trials</h2>")


def test_a_passing_gate_says_what_it_tested(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gated = _gated(pytester, tmp_path, monkeypatch, "yes", 0)
    assert PASSED in gated.done.stdout.lines
    assert "failed" not in gated.done.stdout.lines[-1]
    assert gated.suite.get("failures") == "0"
    assert f"- **significance gate**: {PASSED}" in gated.summary
    html = _report(results(gated.root)[-1], tmp_path / "report.html")
    assert 'class="gate gate-passed"' in html
    # Shareable outputs name no file on this machine.
    junit = (tmp_path / "junit.xml").read_text()
    for shared in (html, gated.summary, junit):
        assert str(tmp_path) not in shared


def test_junit_names_no_machine_path_even_where_agent_text_does(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # The candidate writes its workspace's absolute path into the file a check reads: the
    # failed check's text and properties quote it, and JUnit is shared as a CI artifact.
    root = _root(tmp_path, "{{workspace}}/answer.txt says no")
    junit = tmp_path / "junit.xml"
    result = run(pytester, root, f"--junitxml={junit}")
    assert result.ret == 0, result.stdout.str()  # a failed check is evidence, not an error
    [trial] = results(root)
    workspace = trial / "groups" / "regresses@codex" / "candidate" / "workspace"
    written = (workspace / "answer.txt").read_text(encoding="utf-8")
    assert str(workspace) in written  # the agent's text does name the absolute path
    text = junit.read_text(encoding="utf-8")
    assert "answer.txt says no" in text
    assert str(root) not in text
    assert str(tmp_path) not in text
