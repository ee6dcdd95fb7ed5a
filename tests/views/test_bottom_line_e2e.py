"""The decision a run ends with, the commands that show it, and results found from anywhere.

Real runs: the example suite (Pi, scripted model) and a small suite on the fast host.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from pytest_skill_eval.evidence import layout
from pytest_skill_eval.views.terminal import LEGEND
from tests.support import runs
from tests.support.files import read_json, write
from tests.support.github_markdown import shown
from tests.support.roots import answers_root, body_group, make_root, on_fast_host, write_answer
from tests.support.shared import SharedRun

pytestmark = pytest.mark.pi

CHANGELOG_LINE = (
    "changelog-entry: the skill changed 1 of 2 comparisons for the better (fail-to-pass), "
    "none for the worse (pass-to-fail)"
)
CANARY = "CANARY-7f3e-not-for-pull-requests"


def skill_eval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("skill-eval")
    return subprocess.run(
        [str(script), *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def test_the_example_run_ends_with_its_bottom_line_and_a_command_that_works_from_there(
    example_run: SharedRun,
) -> None:
    lines = example_run.stdout.splitlines()
    assert CHANGELOG_LINE in lines
    assert (
        "natural-activation: the skill changed 1 of 1 comparison for the better "
        "(fail-to-pass), none for the worse (pass-to-fail)"
    ) in lines
    # The progress letters' legend, once per run.
    assert sum(line == LEGEND for line in lines) == 1
    (see,) = [line for line in lines if line.startswith("see it: skill-eval view ")]
    shown = see.removeprefix("see it: skill-eval view ")
    result = runs.result_dir(example_run.root)
    assert shown == f".skill-eval/runs/{result.name}"  # relative: shorter from the root
    done = skill_eval("view", shown, cwd=example_run.root)  # where the run was started
    assert done.returncode == 0, done.stderr
    assert f"bottom-line\t{CHANGELOG_LINE.replace(': ', chr(9), 1)}" in done.stdout.splitlines()


def test_latest_and_an_id_are_found_from_a_subdirectory_of_the_project(
    example_run: SharedRun, tmp_path: Path
) -> None:
    result = runs.result_dir(example_run.root)
    inside = example_run.root / "skills"
    for target in ("latest", result.name):
        done = skill_eval("view", target, cwd=inside)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"Result {result.name} [complete]\n")
    # A project whose ini file names the definition root: found from a directory below it.
    project = tmp_path / "project"
    shutil.copytree(result, project / "defs" / ".skill-eval" / "runs" / result.name)
    write(project / "pytest.ini", "[pytest]\nskill_eval_root = defs\n")
    (project / "src" / "deep").mkdir(parents=True)
    done = skill_eval("summary", "latest", "--markdown", cwd=project / "src" / "deep")
    assert done.returncode == 0, done.stderr
    assert f"result {result.name}" in done.stdout.replace("\\", "")


def test_latest_with_no_result_is_one_line_naming_it(tmp_path: Path) -> None:
    done = skill_eval("view", "latest", cwd=tmp_path)
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("skill-eval: Cannot find result: latest")


def _cells(tokens: list[Token], kind: str) -> list[list[str]]:
    """The text of each table row's cells, for header (`th`) or body (`td`) cells, as a reader
    sees it (without the invisible word joiners that keep GitHub from linking)."""
    rows: list[list[str]] = []
    for token in tokens:
        if token.type == "tr_open":
            rows.append([])
        elif token.type == f"{kind}_open":
            rows[-1].append("")
        elif token.type == "inline" and rows and rows[-1] and rows[-1][-1] == "":
            text = "".join(c.content for c in token.children or [] if c.type == "text")
            rows[-1][-1] = shown(text)
    return [r for r in rows if r]


def _plain(markdown: str) -> str:
    """What a reader sees: the rendered HTML with its tags removed."""
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    return shown(re.sub(r"<[^>]+>", "", html))


def test_the_markdown_summary_and_the_step_summary_show_the_decision_and_no_agent_output(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    group = body_group("answer", **on_fast_host())
    reply: list[dict[str, Any]] = [
        {
            "response": {
                "tool_calls": [
                    {
                        "name": "write",
                        "arguments": {"path": "answer.txt", "content": f"yes {CANARY}"},
                    }
                ],
                "usage": {"input": 1000, "output": 20},
            }
        },
        {"response": {"text": f"done {CANARY}", "usage": {"input": 1100, "output": 5}}},
    ]
    root = make_root(
        tmp_path / "root",
        [group],
        {"answer/baseline": write_answer("no"), "answer/candidate": reply},
    )
    write(root / "fixture" / "README.md", f"A task. {CANARY}\n")
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    outcome = runs.run(pytester, root)
    assert outcome.ret == 0, outcome.stdout.str()
    result = runs.result_dir(root)
    candidate = layout.group_dir(result, "answer", "codex") / "candidate"
    assert CANARY in (candidate / "final.md").read_text(encoding="utf-8")

    done = skill_eval("summary", result.name, "--markdown", "--report-url", "r/x.html", cwd=root)
    assert done.returncode == 0, done.stderr
    for markdown in (done.stdout, step_summary.read_text(encoding="utf-8")):
        assert CANARY not in markdown
        tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
        assert _cells(tokens, "th") == [
            ["group", "comparison", "baseline", "candidate", "transition", "95% CI"],
            ["group", "variant", "check", "kind", "state"],
            ["group", "tokens-in", "tokens-out", "model-calls", "tool-calls", "cost-usd"],
        ]
        rows = _cells(tokens, "td")
        # One row per comparison with both states; the checks that did not pass (folded).
        assert rows[:2] == [
            ["answer@codex", "says-yes", "fail", "pass", "fail-to-pass", "-"],
            ["answer@codex", "baseline", "baseline-says-yes", "file-text", "fail"],
        ]
        # Per-arm usage: counts and cost only, never agent output.
        assert [row[0] for row in rows[2:]] == ["answer@codex"]
        assert markdown.count("<details><summary>") == 3
        seen = _plain(markdown)
        assert (
            "answer@codex: the skill changed 1 of 1 comparison for the better (fail-to-pass), "
            "none for the worse (pass-to-fail)"
        ) in seen
        assert f"sha256:{read_json(result / 'seal.json')['root']}" in seen
    links = [t.attrs.get("href") for t in _inline(done.stdout) if t.type == "link_open"]
    assert links == ["r/x.html"]
    appended = step_summary.read_text(encoding="utf-8")
    assert appended.startswith("earlier step\n## skill-eval: ")  # appended, not replaced
    assert appended.count("## skill-eval: ") == 1  # once per invocation


def _inline(markdown: str) -> list[Token]:
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    return [child for token in tokens for child in token.children or []]


def test_the_readme_shows_the_example_bottom_line_as_it_prints(example_run: SharedRun) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("The example prints:\n\n```\n", 1)[1].split("\n```", 1)[0]
    result = runs.result_dir(example_run.root)
    shown = re.sub(r"\d{14}-[0-9a-f]{8}", result.name, block).splitlines()
    printed = example_run.stdout.splitlines()
    start = printed.index(shown[0])
    assert printed[start : start + len(shown)] == shown


def test_an_aggregate_ends_with_each_comparison_unresolved_and_the_trials_it_would_need(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = answers_root(tmp_path / "root", {"answer/baseline": "no", "answer/candidate": "yes"})
    outcome = runs.run(pytester, root, "--skill-eval-trials", "2")
    assert outcome.ret == 0, outcome.stdout.str()
    (aggregate,) = runs.aggregates(root)
    lines = outcome.stdout.lines
    bottom = [line for line in lines if line.startswith("answer@codex: ")]
    assert len(bottom) == 1
    assert bottom[0].startswith(
        "answer@codex: says-yes not resolved after 2 trials (2 fail-to-pass, 0 pass-to-fail); "
        "about "
    )
    (see,) = [line for line in lines if line.startswith("see it: skill-eval view ")]
    shown = see.removeprefix("see it: skill-eval view ")
    assert shown.endswith(f".skill-eval/runs/{aggregate.name}")
    viewed = skill_eval("view", shown, cwd=pytester.path)  # where pytest was started
    assert viewed.stdout.startswith(f"Aggregate {aggregate.name} "), viewed.stderr
    done = skill_eval("summary", "latest", "--markdown", cwd=root)
    assert done.returncode == 0, done.stderr
    assert f"aggregate {aggregate.name}" in _plain(done.stdout)
    tokens = MarkdownIt("commonmark").enable("table").parse(done.stdout)
    # The comparison's row: passes per arm, the discordant pairs, intervals rounded as the
    # terminal rounds them.
    assert _cells(tokens, "td")[0] == [
        "answer@codex",
        "says-yes",
        "0/2 pass",
        "2/2 pass",
        "0 pass-to-fail, 2 fail-to-pass",
        "[0.00, 0.66] → [0.34, 1.00]",
    ]
