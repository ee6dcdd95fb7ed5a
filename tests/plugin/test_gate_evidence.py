"""Only verified, distinct evidence of the same inputs moves the noise floor and the gate.

Real scripted runs on the fastest host. An aggregate planted or edited in the results directory
does not verify; a result copied under another id holds the same subject runs (their sealed
nonces), so it counts once; a result or floor of another definition is another test. Each is set
aside and named, and the run names, in its terminal, JUnit XML and Markdown summary, the floor
and the results (ids and seal roots) that decided.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.evidence import sealed_root
from pytest_skill_eval.views.summary import render_markdown
from tests.support.roots import answers_root, fast_dir, write_answer, write_script
from tests.support.runs import aggregates, results, run

pytestmark = [pytest.mark.pi, pytest.mark.codex]

GATE = ("--skill-eval-fail-on", "significant-regression")
CANDIDATE_CHECK = f"{fast_dir('answers')}::candidate-says-yes"
UNVERIFIED = "seal does not verify (skill-eval verify names what changed)"
OTHER = "other inputs (a changed definition or input is another test)"
DUPLICATE = "duplicate (the same subject runs, counted once)"


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _sealed(trials: list[Path]) -> str:
    return ", ".join(f"{t.name} sha256:{sealed_root(t)}" for t in trials)


def _trial_number(result: Path) -> int:
    invocation = json.loads((result / "invocation.json").read_text(encoding="utf-8"))
    return int(invocation["selection"]["trial"])


def _properties(junit: Path, name: str) -> list[str]:
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    return [p.get("value", "") for p in suite.iter("property") if p.get("name") == name]


def _new_prompt(root: Path, group: str) -> None:
    """Edit a group's definition (its prompt) without changing what its runs do."""
    _edit(root / "groups" / f"{group}.json", lambda g: g["input"].update(prompt="Answer."))


def test_copies_count_once_other_inputs_are_set_aside_and_the_gate_names_what_it_pooled(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = answers_root(
        tmp_path / "root", {"regresses/baseline": "yes", "regresses/candidate": "no"}
    )
    # Six pass-to-fail pairs: the always-valid p = 2^6 / C(12, 6) = 0.069, the gate passes.
    first = run(pytester, root, *GATE, "--skill-eval-trials", "6")
    assert first.ret == 0, first.stdout.str()
    genuine = sorted(results(root), key=_trial_number)  # the order they ran in
    # Each run sealed its own nonce: what it is counted once by, wherever a copy of it lies.
    nonces = {
        json.loads(path.read_text(encoding="utf-8"))["nonce"]
        for trial in genuine
        for path in trial.glob("groups/*/*/run.json")
    }
    assert len(nonces) == 12, nonces
    assert all(len(nonce) == 32 for nonce in nonces), nonces
    runs = root / ".skill-eval" / "runs"
    # Each copied under a far-future id: they verify (an id is no part of a seal).
    copies = [
        Path(shutil.copytree(trial, runs / f"2999123123595{n}-copy{n}"))
        for n, trial in enumerate(genuine)
    ]
    step = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    junit = tmp_path / "junit.xml"
    gated = run(pytester, root, *GATE, f"--junitxml={junit}")
    # One more pair: seven genuine ones, p = 2^7 / C(14, 7) = 0.0373. Counted as new trials,
    # the copies would have made it thirteen pairs of three invocations.
    assert gated.ret == 1, gated.stdout.str()
    gated.stdout.fnmatch_lines(
        [
            "skill-eval: significant regression: regresses/says-yes: pass-to-fail 7, "
            "fail-to-pass 0, Holm-adjusted p=0.0373 (pooled over 7 trial(s) of 2 invocation(s))"
        ]
    )
    (latest,) = [r for r in results(root) if r not in genuine and r not in copies]
    pooled = f"significant-regression gate: pooled 7 results: {_sealed([*genuine, latest])}"
    duplicates = f"significant-regression gate: set aside 6 results: {DUPLICATE}: " + ", ".join(
        f"{copy.name} (of {trial.name})" for copy, trial in zip(copies, genuine, strict=True)
    )
    lines = gated.stdout.lines
    assert f"skill-eval: {pooled}" in lines
    assert f"skill-eval: {duplicates}" in lines
    assert [pooled, duplicates] == _properties(junit, "skill-eval-gate")[:2]
    markdown = step.read_text(encoding="utf-8")
    assert f"- {pooled}\n" in markdown
    assert f"- {duplicates}\n" in markdown

    # A new definition is a new test: every earlier result is set aside as of other inputs.
    _new_prompt(root, "regresses")
    changed = run(pytester, root, *GATE)
    assert changed.ret == 0, changed.stdout.str()
    earlier = [*genuine, latest, *copies]
    (newest,) = [r for r in results(root) if r not in earlier]
    assert f"skill-eval: significant-regression gate: pooled 1 result: {_sealed([newest])}" in (
        changed.stdout.lines
    )
    assert (
        f"skill-eval: significant-regression gate: set aside 13 results: {OTHER}: "
        + ", ".join(r.name for r in earlier)
    ) in changed.stdout.lines


def _answers_root(tmp_path: Path, **answers: str) -> Path:
    return answers_root(
        tmp_path / "root",
        {
            "answers/baseline": "yes",
            "answers/candidate": "yes",
            **{f"answers/{key.replace('_', '-')}": value for key, value in answers.items()},
        },
    )


def _flaky(aggregate: dict[str, Any], identity: str | None = None) -> None:
    """An aggregate edited to say the candidate's check disagreed with itself (and its id)."""
    row = aggregate["noiseFloor"]["perCheck"][CANDIDATE_CHECK]
    row.update(disagreements=1, rate=0.5, flaky=True)
    aggregate["id"] = identity or aggregate["id"]


def test_a_planted_or_edited_noise_floor_marks_nothing_flaky(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _answers_root(tmp_path)
    floor = run(pytester, root, "--skill-eval-noise-floor", "2")  # identical arms agree
    assert floor.ret == 0, floor.stdout.str()
    (genuine,) = aggregates(root)
    planted = genuine.parent / "29991231235959-planted"
    shutil.copytree(genuine, planted)
    _edit(planted / "aggregate.json", lambda a: _flaky(a, planted.name))
    _edit(genuine / "aggregate.json", _flaky)
    # A real regression: the candidate now writes "no".
    write_script(root / "scripts" / "answers" / "candidate.yaml", write_answer("no"))
    gated = run(pytester, root, "--skill-eval-fail-on=regression")
    assert gated.ret == 1, gated.stdout.str()
    assert (
        f"skill-eval: noise floor: set aside 2 aggregates: {UNVERIFIED}: {genuine.name}, "
        f"{planted.name}"
    ) in gated.stdout.lines
    gate = json.loads((results(root)[-1] / "invocation.json").read_text(encoding="utf-8"))
    assert gate["flakyGate"]["noiseFloor"] is None
    assert gate["flakyGate"]["checks"] == []


def test_the_floor_that_decides_is_named_and_one_of_other_inputs_is_set_aside(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # Trial 2's candidate says no: identical arms disagree, the check is flaky.
    root = _answers_root(tmp_path, candidate_trial2="no")
    floor = run(pytester, root, "--skill-eval-noise-floor", "2")
    assert floor.ret == 0, floor.stdout.str()
    (genuine,) = aggregates(root)
    listed = json.loads((genuine / "aggregate.json").read_text(encoding="utf-8"))["trials"]
    trials = [genuine.parent / trial["id"] for trial in listed]  # in the order they ran
    # Its trials are one invocation's: they share the nonce their invocation.json sealed.
    shared = {
        json.loads((t / "invocation.json").read_text(encoding="utf-8"))["nonce"] for t in trials
    }
    assert len(shared) == 1, shared
    copy = Path(shutil.copytree(genuine, genuine.parent / "29991231235959-copy"))
    _edit(copy / "aggregate.json", lambda a: a.update(id=copy.name))
    write_script(root / "scripts" / "answers" / "candidate.yaml", write_answer("no"))
    junit = tmp_path / "junit.xml"
    gated = run(pytester, root, "--skill-eval-fail-on=regression", f"--junitxml={junit}")
    assert gated.ret == 0, gated.stdout.str()  # the genuine floor found the check flaky
    decided = (
        f"noise floor: {genuine.name} decides (2 checks flaky, never gating); its trials: "
        f"{_sealed(trials)}"
    )
    duplicate = f"noise floor: set aside 1 aggregate: {DUPLICATE}: {copy.name} (of {genuine.name})"
    assert f"skill-eval: {decided}" in gated.stdout.lines
    assert f"skill-eval: {duplicate}" in gated.stdout.lines
    assert _properties(junit, "skill-eval-noise-floor") == [decided, duplicate]
    assert f"- {decided}\n" in render_markdown(results(root)[-1])

    # Another definition of the group: the floor measured the old one and decides nothing.
    _new_prompt(root, "answers")
    changed = run(pytester, root, "--skill-eval-fail-on=regression")
    assert changed.ret == 1, changed.stdout.str()
    assert (
        f"skill-eval: noise floor: set aside 2 aggregates: {OTHER}: {genuine.name}, {copy.name}"
    ) in changed.stdout.lines
