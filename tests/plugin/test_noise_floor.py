"""`--skill-eval-noise-floor N`: identical arms on real runs; a check they disagree on is flaky.

Real runs on the fastest host against the scripted model. The baseline arm runs the
candidate's definition; per-trial scripts make the candidate's answer vary, as a noisy model's
would, while the baseline arm's script always says yes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.views.summary import render_markdown
from tests.support.files import read_json
from tests.support.roots import answers_root, fast_dir, write_answer, write_script
from tests.support.runs import aggregates, results, run

pytestmark = [pytest.mark.pi, pytest.mark.codex]

CANDIDATE_CHECK = f"{fast_dir('answers')}::candidate-says-yes"


def test_identical_arms_that_disagree_mark_the_check_flaky_and_it_never_gates(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = answers_root(
        tmp_path / "root",
        {
            "answers/baseline": "yes",
            "answers/candidate": "yes",
            "answers/candidate-trial2": "no",
            "answers/candidate-trial3": "yes",
        },
    )
    floor_run = run(pytester, root, "--skill-eval-noise-floor", "3")
    assert floor_run.ret == 0, floor_run.stdout.str()
    trials = results(root)
    assert len(trials) == 3
    for result_dir in trials:
        # Recorded as what it is: no real baseline, the candidate's definition on both arms.
        assert read_json(result_dir / "invocation.json")["identicalArms"] is True
        definition = read_json(result_dir / "groups" / fast_dir("answers") / "definition.json")
        assert definition["variants"]["baseline"] == definition["variants"]["candidate"]
    (aggregate_dir,) = aggregates(root)
    floor = read_json(aggregate_dir / "aggregate.json")["noiseFloor"]
    assert floor["trials"] == 3
    assert floor["bound"] == 0
    row = floor["perCheck"][CANDIDATE_CHECK]
    assert (row["disagreements"], row["trials"], row["flaky"]) == (1, 3, True)
    assert row["rate"] == pytest.approx(1 / 3)
    assert 0 < row["interval"][0] < row["rate"] < row["interval"][1]
    floor_run.stdout.fnmatch_lines([f"*{CANDIDATE_CHECK}: identical arms disagreed 1/3*flaky*"])

    # A later ordinary run whose candidate fails that check: the gate ignores it.
    write_script(root / "scripts" / "answers" / "candidate.yaml", write_answer("no"))
    gated = run(pytester, root, "-v", "--skill-eval-fail-on=candidate")
    assert gated.ret == 0, gated.stdout.str()
    gated.stdout.fnmatch_lines(["*candidate-says-yes*FAIL (flaky: does not gate)*"])
    latest = results(root)[-1]
    gate = read_json(latest / "invocation.json")["flakyGate"]
    assert gate["noiseFloor"] == aggregate_dir.name
    assert CANDIDATE_CHECK in gate["checks"]
    grade = read_json(latest / "groups" / fast_dir("answers") / "deterministic-grade.json")
    assert {c["id"]: c["state"] for c in grade["checks"]}["candidate-says-yes"] == "fail"
    # The pull request's summary marks it too, and the floor's aggregate says which is flaky.
    assert "fail (flaky: does not gate)" in render_markdown(latest)
    assert "; flaky" in render_markdown(aggregate_dir)

    # Without a floor (another results directory) the same failure gates.
    elsewhere = run(
        pytester, root, "--skill-eval-fail-on=candidate", "--skill-eval-results",
        str(tmp_path / "elsewhere"),
    )  # fmt: skip
    assert elsewhere.ret == 1, elsewhere.stdout.str()


def test_the_noise_floor_refuses_a_trial_count_of_its_own(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = answers_root(tmp_path / "root", {"answers/baseline": "yes", "answers/candidate": "yes"})
    both = run(pytester, root, "--skill-eval-noise-floor", "3", "--skill-eval-trials", "2")
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    both.stderr.fnmatch_lines(
        ["*--skill-eval-noise-floor runs its own trials of identical arms; drop "
         "--skill-eval-trials"]
    )  # fmt: skip
    one = run(pytester, root, "--skill-eval-noise-floor", "1")
    assert one.ret == pytest.ExitCode.USAGE_ERROR
    one.stderr.fnmatch_lines(['*--skill-eval-noise-floor "1" is not accepted*at least 2*'])
