"""The example suite end to end: real Pi, scripted model, evidence on disk, graded sub-results."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.support import runs
from tests.support.example import OUTCOMES
from tests.support.files import read_json
from tests.support.shared import SharedRun

pytestmark = pytest.mark.pi


def test_example_suite_runs_with_real_pi_and_keeps_evidence(example_run: SharedRun) -> None:
    # The run passed (shared_run checks its exit status); here is what it printed and kept.
    example_root, junit = example_run.root, example_run.junit
    pytest.LineMatcher(example_run.stdout.splitlines()).fnmatch_lines(
        [
            "*natural-activation::baseline-reads-skill?baseline? FAIL expected=*observed=*",
            "*natural-activation?baseline? PASSED*",
            "*natural-activation::candidate-reads-skill?candidate? PASS expected=*",
            "*natural-activation::skill-read-on-first-turn?comparison? FAIL-TO-PASS*",
            "*natural-activation?candidate? PASSED*",
            "*changelog-entry::baseline-entry?baseline? FAIL expected=*",
            "*changelog-entry?baseline? PASSED*",
            "*changelog-entry::candidate-entry?candidate? PASS expected=*",
            "*changelog-entry::entry-in-fixed?comparison? FAIL-TO-PASS*",
            "*changelog-entry?candidate? PASSED*",
            "*= skill-eval =*",
            "*group changelog-entry ?complete? baseline=complete candidate=complete*"
            "cost=simulated $*",
            "*comparison entry-in-fixed: fail-to-pass",
        ]
    )
    result_dir = runs.result_dir(example_root)
    for name in ("invocation.json", "summary.json"):
        assert (result_dir / name).is_file()
    summary = read_json(result_dir / "summary.json")
    assert summary["state"] == "complete"
    assert [g["id"] for g in summary["groups"]] == ["natural-activation", "changelog-entry"]

    body = result_dir / "groups" / "changelog-entry"
    for variant in ("baseline", "candidate"):
        vdir = body / variant
        for artifact in ("run.json", "events.jsonl", "transcript.json", "final.md", "stderr.log"):
            assert (vdir / artifact).is_file(), artifact
        run = read_json(vdir / "run.json")
        assert run["state"] == "complete"
        assert run["binary"]["version"] == "0.73.1"
        assert run["provider"]["mode"] == "scripted"
        assert run["usage"]["cost"]["total"] > 0
    candidate = read_json(body / "candidate" / "run.json")
    assert candidate["delivery"]["kind"] == "explicit-skill-command"
    assert candidate["delivery"]["command"] == "skill:changelog-keeper"
    assert candidate["turns"][0]["deliveredPrompt"].startswith("/skill:changelog-keeper ")
    assert candidate["effects"]["changes"] == {
        "created": [],
        "modified": ["CHANGELOG.md"],
        "deleted": [],
    }
    changelog = (body / "candidate" / "workspace" / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "### Fixed\n- Handle semicolons in CSV export (#42)\n" in changelog
    baseline = read_json(body / "baseline" / "run.json")
    assert baseline["delivery"]["kind"] == "natural-prompt"
    # The skill body reached the model only in the candidate.
    transcript = read_json(body / "candidate" / "transcript.json")
    assert transcript[0]["content"][0]["text"].startswith('<skill name="changelog-keeper"')
    assert "changelog-keeper" not in json.dumps(read_json(body / "baseline" / "transcript.json"))

    assert runs.outcome(body) == OUTCOMES["changelog-entry"]

    activation = result_dir / "groups" / "natural-activation"
    cand = read_json(activation / "candidate" / "run.json")
    assert cand["activation"]["targetRead"] is True
    assert cand["activation"]["readTurns"] == [1]
    assert read_json(activation / "baseline" / "run.json")["activation"]["targetRead"] is False

    _check_junit(junit, body)


def _check_junit(junit: Path, body: Path) -> None:
    """One row per item, per check and per comparison, each with its state and evidence."""
    cases = list(ElementTree.parse(junit).getroot().iter("testcase"))
    assert len(cases) == 4 + 8 + 3
    rows = {}
    for case in cases:
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        rows[f"{case.get('classname')}::{case.get('name')}"] = (props, case)
    entry_props, entry_case = next(
        v for k, v in rows.items() if k.endswith("changelog-entry::baseline-entry[baseline]")
    )
    assert entry_props["state"] == "fail"
    # JUnit is shared: it names evidence relative to the rootdir, never by absolute path.
    assert not Path(str(entry_props["evidence"])).is_absolute()
    assert str(body).endswith(f"/{entry_props['evidence']}")
    assert entry_case.find("failure") is None  # a failed check is evidence, not a test failure
    transition = next(v for k, v in rows.items() if k.endswith("entry-in-fixed[comparison]"))
    assert transition[0]["state"] == "fail-to-pass"
    item = next(v for k, v in rows.items() if k.endswith("changelog-entry[candidate]"))
    assert str(body / "candidate").endswith(f"/{item[0]['evidence']}")


def test_failed_checks_fail_pytest_only_under_fail_on_any(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    result = runs.run(pytester, example_root, "-k", "changelog-entry", "--skill-eval-fail-on=any")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*baseline-entry*"])
