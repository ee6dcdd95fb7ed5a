"""A failed text check shows the text around its expectation; adaptive trials print little.

Real runs on the fastest host against the scripted model.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_skill_eval.views.summary import render_markdown
from pytest_skill_eval.views.text import render_text
from tests.support.files import read_json
from tests.support.roots import answers_root, fast_dir
from tests.support.runs import aggregates, results, run

pytestmark = [pytest.mark.pi, pytest.mark.codex]

# "ye" (the longest start of "yes" in the text) is at 400: the excerpt starts 80 before it.
ANSWER = "x" * 400 + "ye5, said the model" + "z" * 400


def test_a_failed_file_text_check_shows_an_excerpt_around_the_expectation(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = answers_root(tmp_path / "root", {"answers/baseline": "yes", "answers/candidate": ANSWER})
    junit = tmp_path / "junit.xml"
    result = run(pytester, root, "-v", "--skill-eval-fail-on=candidate", f"--junitxml={junit}")
    assert result.ret == 1, result.stdout.str()
    (result_dir,) = results(root)
    grade = read_json(result_dir / "groups" / fast_dir("answers") / "deterministic-grade.json")
    checks = {check["id"]: check for check in grade["checks"]}
    observed = checks["candidate-says-yes"]["observed"]
    excerpt = "x" * 80 + "ye5, said the model" + "z" * (240 - 80 - 19)
    assert observed["excerpt"] == excerpt
    assert observed["excerptAt"] == 320
    assert len(observed["sha256"]) == 64  # the hash is still what names the whole text
    # A passing text check keeps no excerpt.
    assert "excerpt" not in checks["baseline-says-yes"]["observed"]

    shown = f'at 320: …"{excerpt}"'
    text_rows = [r for r in render_text(result_dir).splitlines() if "candidate-says-yes" in r]
    assert text_rows[0].split("\t")[-1] == f"text {shown}"
    assert "x" * 81 not in render_text(result_dir)  # bounded: the file's start is not shown
    # -v: the clipped observation is followed by the excerpt.
    result.stdout.fnmatch_lines([f"*candidate-says-yes*FAIL*text {shown}*"])
    (failure,) = [
        case.find("failure")
        for case in ET.parse(junit).getroot().iter("testcase")
        if "candidate-says-yes" in case.get("name", "")
    ]
    assert failure is not None
    message = failure.get("message") or ""
    assert f"observed text: {shown}" in message
    assert "x" * 81 not in message
    # The summary for a pull request shows it only when asked: by default it holds no agent
    # output; with --excerpts the bounded excerpt, in a fenced code block under its check.
    assert "ye5, said the model" not in render_markdown(result_dir)
    with_excerpts = render_markdown(result_dir, excerpts=True)
    lines = with_excerpts.splitlines()
    (at,) = [n for n, r in enumerate(lines) if "/ candidate-says-yes:" in r]
    assert lines[at + 1 : at + 5] == ["", "  ```", f"  {shown}", "  ```"]
    assert "x" * 81 not in with_excerpts


def test_adaptive_trials_print_one_line_per_group_and_trial_then_the_aggregate(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = answers_root(tmp_path / "root", {"same/baseline": "yes", "same/candidate": "yes"})
    # Arms that agree in every trial stop for futility after 6 of at most 20.
    result = run(pytester, root, "--skill-eval-trials", "auto")
    assert result.ret == 0, result.stdout.str()
    assert len(results(root)) == 6
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "= skill-eval =" in line)
    (aggregate_dir,) = aggregates(root)
    first_aggregate = next(i for i, line in enumerate(lines) if line.startswith("aggregate "))
    assert lines[start + 1].startswith("legend: ")  # the progress letters, said once
    per_trial = lines[start + 2 : first_aggregate]
    assert [line.split(" [")[0] for line in per_trial] == [
        f"trial {k} group {fast_dir('same')}" for k in range(1, 7)
    ]
    assert lines[first_aggregate].endswith(str(aggregate_dir))
    # Nothing about single trials follows the aggregate.
    assert not any(line.startswith(("trial ", "result ")) for line in lines[first_aggregate:])
