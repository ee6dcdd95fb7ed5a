"""The shipped example suite on Claude Code and on both hosts, from the same scripts, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.views.html import render_html
from pytest_skill_eval.views.text import render_text
from tests.support import runs
from tests.support.files import read_json

pytestmark = [pytest.mark.pi, pytest.mark.claude]

# What the example suite's scripts give on Pi (tests/plugin/test_example_e2e.py asserts the same).
EXPECTED = {
    "natural-activation": (
        {"baseline-reads-skill": "fail", "candidate-reads-skill": "pass"},
        {"skill-read-on-first-turn": "fail-to-pass"},
    ),
    "changelog-entry": (
        {
            "baseline-entry": "fail",
            "candidate-entry": "pass",
            "baseline-only-changelog": "pass",
            "candidate-only-changelog": "pass",
            "candidate-read-first": "pass",
            "candidate-reply": "pass",
        },
        {"entry-in-fixed": "fail-to-pass", "only-changelog": "pass-to-pass"},
    ),
}


def _outcome(group_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    grade: dict[str, Any] = read_json(group_dir / "deterministic-grade.json")
    return (
        {c["id"]: c["state"] for c in grade["checks"]},
        {c["id"]: c["transition"] for c in grade["comparisons"]},
    )


def test_example_suite_on_claude_code_gives_pis_states_and_transitions(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    result = runs.run(pytester, example_root, "-v", "--skill-eval-host", "claude-code")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*natural-activation?candidate@claude-code? PASSED*",
            "*changelog-entry::entry-in-fixed?comparison@claude-code? FAIL-TO-PASS*",
            "*group changelog-entry@claude-code ?complete? baseline=complete candidate=complete*",
        ]
    )
    assert "cross-host" not in result.stdout.str()  # one host: no table
    result_dir = runs.result_dir(example_root)
    assert read_json(result_dir / "invocation.json")["hosts"] == ["claude-code"]
    summary = read_json(result_dir / "summary.json")
    assert [(g["id"], g["host"]) for g in summary["groups"]] == [
        ("natural-activation", "claude-code"),
        ("changelog-entry", "claude-code"),
    ]
    assert sorted(p.name for p in (result_dir / "groups").iterdir()) == [
        "changelog-entry@claude-code",
        "natural-activation@claude-code",
    ]
    for group_id, expected in EXPECTED.items():
        group_dir = result_dir / "groups" / f"{group_id}@claude-code"
        assert _outcome(group_dir) == expected, group_id
        for variant in ("baseline", "candidate"):
            run = read_json(group_dir / variant / "run.json")
            assert run["host"] == {
                "name": "claude-code",
                "chosenBy": "invocation",
                "declared": "pi",
            }
            assert run["process"]["host"] == "claude-code"
            assert run["provider"]["mode"] == "scripted"
            assert "pi" not in run


@pytest.mark.codex
def test_three_hosts_in_one_invocation_give_all_and_the_cross_host_table(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    hosts = [arg for host in ("pi", "claude-code", "codex") for arg in ("--skill-eval-host", host)]
    result = runs.run(pytester, example_root, *hosts, "--skill-eval-trials", "2")
    assert result.ret == 0, result.stdout.str()
    trial_dirs = runs.results(example_root)
    assert len(trial_dirs) == 2
    result_dir = trial_dirs[0]
    assert read_json(result_dir / "invocation.json")["hosts"] == ["pi", "claude-code", "codex"]
    for group_id, (checks, transitions) in EXPECTED.items():
        pi_dir = result_dir / "groups" / group_id
        assert _outcome(pi_dir) == (checks, transitions)
        assert _outcome(result_dir / "groups" / f"{group_id}@claude-code") == (checks, transitions)
        if group_id == "changelog-entry":
            # A tool-call on `read`: Codex has no read tool, so it is unavailable, not guessed.
            checks = {**checks, "candidate-read-first": "unavailable"}
        assert _outcome(result_dir / "groups" / f"{group_id}@codex") == (checks, transitions)
        pi_run = read_json(pi_dir / "candidate" / "run.json")
        assert pi_run["host"] == {"name": "pi", "chosenBy": "invocation", "declared": "pi"}
        assert "host" not in read_json(pi_dir / "group.json")
    result.stdout.fnmatch_lines(
        [
            "*= skill-eval =*",
            "  cross-host natural-activation (pi, claude-code, codex): held on every host",
            "*comparison skill-read-on-first-turn: pi=fail-to-pass claude-code=fail-to-pass "
            "codex=fail-to-pass held",
            "  cross-host changelog-entry (pi, claude-code, codex): differs between hosts",
            "    check baseline-entry: pi=fail claude-code=fail codex=fail held",
            "    check candidate-read-first: pi=pass claude-code=pass codex=unavailable differs",
            "    comparison entry-in-fixed: pi=fail-to-pass claude-code=fail-to-pass "
            "codex=fail-to-pass held",
        ]
    )
    text = render_text(result_dir)
    assert (
        "Cross-host:\ncross-host natural-activation (pi, claude-code, codex): held on every host\n"
        in text
    )
    assert "Group changelog-entry@claude-code [complete] type=body" in text
    page = render_html(result_dir)
    assert '<section class="cross-host" id="cross-host">' in page
    assert "<h3><code>changelog-entry</code> differs between hosts</h3>" in page
    assert "<th>pi</th><th>claude-code</th><th>codex</th>" in page
    # Over the two trials: the aggregate counts each host apart and says what held.
    (aggregate_dir,) = runs.aggregates(example_root)
    tables = {t["id"]: t for t in read_json(aggregate_dir / "aggregate.json")["crossHost"]}
    assert tables["natural-activation"]["held"] is True
    assert tables["changelog-entry"]["held"] is False
    rows = {(r["kind"], r["id"]): r for r in tables["changelog-entry"]["rows"]}
    read_first = rows[("check", "candidate-read-first")]
    assert read_first["hosts"]["codex"] == {"pass": 0, "fail": 0, "unavailable": 2}
    assert read_first["hosts"]["pi"] == {"pass": 2, "fail": 0, "unavailable": 0}
    assert rows[("comparison", "entry-in-fixed")]["held"] is True
    result.stdout.fnmatch_lines(
        ["*cross-host changelog-entry (pi, claude-code, codex): differs between hosts*"]
    )
    assert "Across hosts" in render_html(aggregate_dir)
