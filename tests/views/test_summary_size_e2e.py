"""The pull-request summary of three groups on every registered host, read in ten seconds.

A real run (every host, scripted) of the example suite with a third group: the summary leads
with the decision, has one row per comparison and the cross-host table, folds the rest in
`<details>`, rounds as the terminal does, and stays near sixty lines.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.registry import names
from pytest_skill_eval.views.summary import render_markdown
from tests.support import runs
from tests.support.github_markdown import read
from tests.support.paths import EXAMPLE

pytestmark = [pytest.mark.pi, pytest.mark.claude, pytest.mark.codex, pytest.mark.gemini]

MOST_LINES = 60


def _three_groups(root: Path) -> Path:
    """The example suite with a third group: natural-activation again under another id."""
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".skill-eval"))
    group = json.loads((root / "groups" / "natural-activation.json").read_text("utf-8"))
    group["id"] = "activation-again"
    (root / "groups" / "activation-again.json").write_text(json.dumps(group), "utf-8")
    shutil.copytree(root / "scripts" / "natural-activation", root / "scripts" / group["id"])
    suite = json.loads((root / "suite.json").read_text("utf-8"))
    suite["groups"].append("groups/activation-again.json")
    (root / "suite.json").write_text(json.dumps(suite), "utf-8")
    return root


def test_three_groups_on_every_host_fit_in_sixty_lines(tmp_path: Path) -> None:
    hosts = names()
    assert len(hosts) == 6
    root = _three_groups(tmp_path / "root")
    done = runs.run_detached(root, *(a for host in hosts for a in ("--skill-eval-host", host)))
    assert done.returncode == 0, done.stdout + done.stderr
    result = runs.results(root)[-1]
    markdown = render_markdown(result)
    lines = markdown.splitlines()
    print(f"summary of 3 groups on {len(hosts)} hosts: {len(lines)} lines")  # shown with -s
    assert len(lines) <= MOST_LINES, markdown
    # The decision first, one line per group (its hosts named when they agree).
    decided = markdown.split("**Bottom line**", 1)[1].split("**Comparisons**", 1)[0]
    assert len([line for line in decided.splitlines() if line.startswith("- ")]) <= 3 * 2
    seen = read(markdown)
    tables = [row for row in seen.rows if row and row[0] == "group"]
    assert ["group", "comparison", "baseline", "candidate", "transition", "95% CI"] in tables
    assert any(row[-1] == "across hosts" for row in tables)
    assert "details" in seen.tags
    assert str(tmp_path) not in markdown
