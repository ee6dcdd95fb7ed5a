"""The shipped example suite on every registered host in one invocation, from the same scripts.

Every test here reads one nested run shared with the summary's size test
(`tests.support.every_host`): one trial, each host on each group and variant. The hosts come
from the registry, so a host registered later joins this run by itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.commands import cli
from tests.support import runs
from tests.support.every_host import (
    AGAIN,
    HOSTS,
    INSTRUCTIONS_MARKER,
    PROJECT_COMMAND,
    PROJECT_SKILL_FOLDERS,
    project_skill,
)
from tests.support.example import OUTCOMES, outcomes_on
from tests.support.files import read_json
from tests.support.host_records import assert_example_record
from tests.support.runs import outcome
from tests.support.shared import SharedRun

pytestmark = [pytest.mark.pi, pytest.mark.claude, pytest.mark.codex, pytest.mark.gemini]

# The views' order: Pi first, then the other hosts as their group directories sort.
TABLE_ORDER = ("pi", *sorted(name for name in HOSTS if name != "pi"))
HOST_LIST = ", ".join(TABLE_ORDER)
# The run's groups: the example's, and natural-activation again under another id.
GROUPS = (*OUTCOMES, AGAIN)


def _expected(host: str, group_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """Pi's states and transitions, with a check on a tool the host cannot show unavailable."""
    outcomes = outcomes_on(host)
    return {**outcomes, AGAIN: outcomes["natural-activation"]}[group_id]


def _read_first(host: str) -> str:
    return _expected(host, "changelog-entry")[0]["candidate-read-first"]


def _row(kind: str, row_id: str, state: Any, held: str) -> str:
    cells = " ".join(f"{host}={state(host)}" for host in TABLE_ORDER)
    return f"    {kind} {row_id}: {cells} {held}"


def test_every_host_gives_pis_outcomes_from_the_same_scripts(every_host: SharedRun) -> None:
    (result_dir,) = runs.results(every_host.root)
    assert read_json(result_dir / "invocation.json")["hosts"] == list(HOSTS)
    for host in HOSTS:
        for group_id in GROUPS:
            name = group_id if host == "pi" else f"{group_id}@{host}"
            group_dir = result_dir / "groups" / name
            assert outcome(group_dir) == _expected(host, group_id), (host, group_id)
            for variant in ("baseline", "candidate"):
                assert_example_record(host, group_dir / variant)


def test_the_terminal_summary_has_the_cross_host_table_of_every_host(
    every_host: SharedRun,
) -> None:
    lines = every_host.stdout.splitlines()
    held_everywhere = len({_read_first(host) for host in HOSTS}) == 1
    verdict = "held on every host" if held_everywhere else "differs between hosts"
    read_first = "held" if held_everywhere else "differs"
    expected = [
        f"  cross-host natural-activation ({HOST_LIST}): held on every host",
        _row("comparison", "skill-read-on-first-turn", lambda _: "fail-to-pass", "held"),
        f"  cross-host changelog-entry ({HOST_LIST}): {verdict}",
        _row("check", "baseline-entry", lambda _: "fail", "held"),
        _row("check", "candidate-read-first", _read_first, read_first),
        _row("comparison", "entry-in-fixed", lambda _: "fail-to-pass", "held"),
    ]
    for line in expected:
        assert line in lines, line


def test_the_text_view_and_html_report_have_every_host(
    every_host: SharedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result_dir = runs.results(every_host.root)[0]
    assert cli.main(["view", str(result_dir)]) == 0
    text = capsys.readouterr().out
    assert f"Cross-host:\ncross-host natural-activation ({HOST_LIST}): held on every host\n" in text
    for host in HOSTS:
        if host != "pi":
            assert f"Group changelog-entry@{host} [complete] type=body" in text, host
    report = tmp_path / "report.html"
    assert cli.main(["report", str(result_dir), "--html", str(report)]) == 0
    page = report.read_text(encoding="utf-8")
    assert '<section class="cross-host" id="cross-host">' in page
    assert "".join(f"<th>{host}</th>" for host in TABLE_ORDER) in page


def test_no_skill_or_instructions_of_the_project_above_the_workspace_reach_any_host(
    every_host: SharedRun,
) -> None:
    sent = [
        path.read_text(encoding="utf-8")
        for path in every_host.root.glob(".skill-eval/runs/*/groups/*/*/model-requests.jsonl")
    ]
    assert len(sent) == len(HOSTS) * len(GROUPS) * 2  # × variants
    planted = (*map(project_skill, PROJECT_SKILL_FOLDERS), PROJECT_COMMAND, INSTRUCTIONS_MARKER)
    for name in planted:
        leaked = [text for text in sent if name in text]
        assert not leaked, (name, leaked[0][:2000])
