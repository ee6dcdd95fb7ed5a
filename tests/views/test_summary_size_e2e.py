"""The pull-request summary of three groups on every registered host, read in ten seconds.

A real run (every host, scripted) of the example suite with a third group, shared with the
all-hosts tests (`tests.support.every_host`): the summary leads with the decision, has one row
per comparison and the cross-host table, folds the rest in `<details>`, rounds as the terminal
does, and stays near sixty lines.
"""

from __future__ import annotations

import pytest

from pytest_skill_eval.views.summary import render_markdown
from tests.support import runs
from tests.support.every_host import HOSTS
from tests.support.github_markdown import read
from tests.support.shared import SharedRun

pytestmark = [pytest.mark.pi, pytest.mark.claude, pytest.mark.codex, pytest.mark.gemini]

MOST_LINES = 60


def test_three_groups_on_every_host_fit_in_sixty_lines(every_host: SharedRun) -> None:
    assert len(HOSTS) == 6
    for result in runs.results(every_host.root):
        markdown = render_markdown(result)
        lines = markdown.splitlines()
        print(f"summary of 3 groups on {len(HOSTS)} hosts: {len(lines)} lines")  # shown with -s
        assert len(lines) <= MOST_LINES, markdown
        # The decision first, one line per group (its hosts named when they agree).
        decided = markdown.split("**Bottom line**", 1)[1].split("**Comparisons**", 1)[0]
        assert len([line for line in decided.splitlines() if line.startswith("- ")]) <= 3 * 2
        seen = read(markdown)
        tables = [row for row in seen.rows if row and row[0] == "group"]
        header = ["group", "comparison", "baseline", "candidate", "transition", "95% CI"]
        assert header in tables
        assert any(row[-1] == "across hosts" for row in tables)
        assert "details" in seen.tags
        assert str(every_host.root.parent) not in markdown
