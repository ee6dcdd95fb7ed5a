"""Over trials, what a host offered of a description group's target: the aggregate counts the
trials per offered state, and its cross-host table, bottom line, Markdown summary, text view and
trigger rates say when the target was not offered intact; a trial's text view shows each
variant's activation.

Two trials on Pi and Codex of the real-skills suite's `long-description`, whose
1,068-character description Codex cuts at 1,024 (Pi offers it whole). (Its `no-front-matter`
group, whose `SKILL.md` neither host lists, is refused on both before spend by the skill
linter.)
"""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

import pytest

from pytest_skill_eval.commands import cli
from tests.support import runs
from tests.support.files import read_json
from tests.support.shared import SharedRun, shared_run, shared_setup

pytestmark = [pytest.mark.pi, pytest.mark.codex]

SUITE = Path(__file__).parent / "data" / "real_skills"
CUT = "but the host did not offer the candidate's target api-guide intact in 2 of 2 trials (cut 2)"


@pytest.fixture(scope="module")
@shared_setup
def two_trials(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The group, two trials each on Pi and Codex (read only)."""
    return shared_run(
        tmp_path_factory,
        "offered-trials",
        partial(shutil.copytree, SUITE),
        *("--skill-eval-host", "pi", "--skill-eval-host", "codex"),
        *("--skill-eval-trials", "2", "-k", "long-description"),
    )


def _aggregate(run: SharedRun) -> Path:
    (found,) = runs.aggregates(run.root)
    return found


def test_the_aggregate_counts_the_trials_per_offered_state(two_trials: SharedRun) -> None:
    data = read_json(_aggregate(two_trials) / "aggregate.json")
    groups = {(g["id"], g.get("host", "pi")): g for g in data["groups"]}
    none = dict.fromkeys(("intact", "cut", "altered", "absent", "unobservable"), 0)
    expected = {
        ("long-description", "pi"): ("api-guide", "intact"),
        ("long-description", "codex"): ("api-guide", "cut"),
    }
    for key, (name, state) in expected.items():
        trials = {**none, state: 2}
        assert groups[key]["offered"] == [
            {"variant": "candidate", "target": name, "trials": trials}
        ], key
    (table,) = [t for t in data["crossHost"] if t["id"] == "long-description"]
    (row,) = [r for r in table["rows"] if r["kind"] == "offered"]
    assert row["id"] == "candidate-target api-guide"
    assert row["hosts"] == {"pi": {**none, "intact": 2}, "codex": {**none, "cut": 2}}
    assert row["held"] is False


def test_the_bottom_line_and_the_cross_host_table_say_the_target_was_not_offered_intact(
    two_trials: SharedRun,
) -> None:
    lines = two_trials.stdout.splitlines()
    (codex,) = [line for line in lines if line.startswith("long-description@codex: ")]
    assert codex.endswith(CUT)
    (pi,) = [line for line in lines if line.startswith("long-description: ")]
    assert "intact" not in pi
    assert "    offered candidate-target api-guide: pi=[intact=2] codex=[cut=2] differs" in lines
    assert any(
        line.startswith("  trigger skills/api-guide@")
        and line.endswith("; the candidate's target was not offered intact in 2 of 4 runs (cut 2)")
        for line in lines
    )


def test_the_markdown_summary_of_the_trials_says_so(
    two_trials: SharedRun, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["summary", "--markdown", str(_aggregate(two_trials))]) == 0
    lines = capsys.readouterr().out.splitlines()
    (bullet,) = [line for line in lines if line.startswith("- **long-description** on codex: ")]
    assert bullet.endswith(CUT)
    row = "| long-description | offered candidate-target api-guide | intact=2 | cut=2 | differs |"
    assert row in lines


def test_the_aggregate_text_view_says_so(
    two_trials: SharedRun, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["view", str(_aggregate(two_trials))]) == 0
    lines = capsys.readouterr().out.splitlines()
    (bottom,) = [line for line in lines if line.startswith("bottom-line\tlong-description@codex\t")]
    assert bottom.endswith(CUT)
    assert "  offered candidate-target api-guide: pi=[intact=2] codex=[cut=2] differs" in lines
    assert any(
        line.startswith("trigger\tskills/api-guide@") and line.endswith("(cut 2)") for line in lines
    )


def test_a_trials_text_view_shows_each_variants_activation(
    two_trials: SharedRun, capsys: pytest.CaptureFixture[str]
) -> None:
    trial = runs.results(two_trials.root)[0]
    assert cli.main(["view", str(trial)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines.count("  activation\tread") == 2  # the candidate, on both hosts
    assert lines.count("  activation\tnot-read") == 2  # each baseline, without a skill
    assert lines.count("  other-skills-read\tnone") == 4
    assert lines.count("  target-offered\tapi-guide\tcut 1024 of 1068") == 1  # Codex's
    assert lines.count("  target-offered\tapi-guide\tintact") == 1  # Pi's
    assert not [line for line in lines if line.startswith("  unrealistic-script\t")]


def test_the_aggregate_counts_each_host_apart(two_trials: SharedRun, tmp_path: Path) -> None:
    aggregate_dir = _aggregate(two_trials)
    (table,) = read_json(aggregate_dir / "aggregate.json")["crossHost"]
    assert table["id"] == "long-description"
    kinds = {row["kind"] for row in table["rows"]}
    assert {"offered", "check"} <= kinds, kinds
    for row in table["rows"]:
        # Every row has each host's own counts, over both of its trials.
        assert set(row["hosts"]) == {"pi", "codex"}, row
        for host, counts in row["hosts"].items():
            assert sum(counts.values()) == 2, (row["id"], host, counts)
    report = tmp_path / "aggregate.html"
    assert cli.main(["report", str(aggregate_dir), "--html", str(report)]) == 0
    page = report.read_text(encoding="utf-8")
    assert "Across hosts" in page
    assert "<th>pi</th><th>codex</th>" in page
