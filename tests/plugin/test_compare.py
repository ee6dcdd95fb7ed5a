"""`skill-eval compare A B`: per-check changes, regressions first, and refusals beyond the axis.

A is the committed view fixture result; B is a copy whose grade or definition is edited, so
each test states exactly which difference it introduces.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.analysis.trials import write_aggregate
from pytest_skill_eval.commands.cli import main
from tests.views.conftest import build_result

GROUP = "changelog-entry"


def edit_json(path: Path, change: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def set_check(result: Path, group: str, check: str, state: str) -> None:
    """Set one check's state in a result's grade, and its comparison side and transition."""

    def change(grade: dict[str, Any]) -> None:
        for row in grade["checks"]:
            if row["id"] == check:
                row["state"] = state
        for comparison in grade["comparisons"]:
            for variant in ("baseline", "candidate"):
                if comparison[variant]["check"] == check:
                    comparison[variant]["state"] = state
            comparison["transition"] = (
                f"{comparison['baseline']['state']}-to-{comparison['candidate']['state']}"
            )

    edit_json(result / "groups" / group / "deterministic-grade.json", change)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    result = build_result(tmp_path / "root")
    return result.parent


def copy_result(runs: Path, name: str) -> Path:
    source = next(p for p in sorted(runs.iterdir()) if (p / "summary.json").is_file())
    target = runs / name
    shutil.copytree(source, target)
    edit_json(target / "summary.json", lambda s: s.update(id=name))
    return target


def compare(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["compare", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def rows(out: str) -> list[list[str]]:
    return [
        line.split("\t")
        for line in out.splitlines()
        if line.startswith(("check\t", "comparison\t"))
    ]


def test_a_pass_that_fails_at_one_trial_is_a_regression_listed_first(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = copy_result(runs, "a"), copy_result(runs, "b")
    set_check(b, GROUP, "candidate-entry", "fail")
    set_check(b, "natural-activation", "baseline-reads-skill", "pass")
    code, out, err = compare(capsys, str(a), str(b))
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "Compare a -> b axis=revision regressions=2"
    found = rows(out)
    assert [r[:6] for r in found[:2]] == [
        ["check", "regression", GROUP, "candidate-entry", "candidate", "file-text"],
        ["comparison", "regression", GROUP, "entry-in-fixed", "candidate", "file-text"],
    ]
    assert found[0][6:11] == ["a=1/1", "b=0/1", "change=-1", found[0][9], "fisher-p=1"]
    assert found[1][11:] == ["a-transitions=fail-to-pass:1", "b-transitions=fail-to-fail:1"]
    statuses = {(r[3], r[4]): r[1] for r in found}
    assert statuses[("baseline-reads-skill", "baseline")] == "improvement"
    assert statuses[("skill-read-on-first-turn", "baseline")] == "improvement"
    assert statuses[("candidate-reply", "candidate")] == "no-change"
    assert [r[1] for r in found[2:]].count("regression") == 0
    # Every check of both groups and both sides of every comparison: 8 checks, 3 comparisons.
    assert len(found) == 8 + 2 * 3


def test_json_carries_the_same_rows(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = copy_result(runs, "a"), copy_result(runs, "b")
    set_check(b, GROUP, "candidate-entry", "fail")
    code, out, _ = compare(capsys, str(a), str(b), "--json")
    report = json.loads(out)
    assert code == 0
    assert report["regressions"] == 2
    first = report["rows"][0]
    assert (first["id"], first["status"], first["change"]) == ("candidate-entry", "regression", -1)
    assert first["a"]["passRate"] == 1.0
    assert first["b"]["passRate"] == 0.0
    assert report["onlyIn"] == {"a": [], "b": []}


def _regressed(runs: Path, trials: int) -> tuple[Path, Path, list[Path]]:
    """Two aggregates of `trials` copies each: the candidate's entry check passes in every
    trial of the first, fails in every one of the second (its trials, the third)."""
    passing = [copy_result(runs, f"p{i}") for i in range(trials)]
    failing = [copy_result(runs, f"f{i}") for i in range(trials)]
    for trial in failing:
        set_check(trial, GROUP, "candidate-entry", "fail")
    before = write_aggregate(runs, passing, trials, None)
    return before, write_aggregate(runs, failing, trials, None), failing


def test_aggregates_regress_only_when_the_interval_excludes_zero(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, failing = _regressed(runs, 5)
    report_text = compare(capsys, str(a), str(b))[1]
    first = rows(report_text)[0]
    assert first[:4] == ["check", "regression", GROUP, "candidate-entry"]
    assert first[6:9] == ["a=5/5", "b=0/5", "change=-1"]
    assert first[10] == "fisher-p=0.00793651"  # 2 / C(10, 5)
    # One trial of five failing is a change the interval cannot tell from none.
    set_check(failing[0], GROUP, "candidate-entry", "pass")
    for trial in failing[2:]:
        set_check(trial, GROUP, "candidate-entry", "pass")
    c = write_aggregate(runs, failing, 5, None)
    entry = next(r for r in rows(compare(capsys, str(a), str(c))[1]) if r[3] == "candidate-entry")
    assert entry[1] == "unresolved"
    assert entry[6:8] == ["a=5/5", "b=4/5"]


def _definitions(a: Path, b: Path) -> str:
    """How a refusal names the two definition files it compared."""
    return (
        f"{a / 'groups' / GROUP / 'definition.json'} vs {b / 'groups' / GROUP / 'definition.json'}"
    )


def _definition_changed(runs: Path, change: Callable[[Any], None]) -> tuple[Path, Path]:
    """Two copies of the result, A and B; B's saved definition of GROUP changed by `change`."""
    a, b = copy_result(runs, "a"), copy_result(runs, "b")
    edit_json(b / "groups" / GROUP / "definition.json", change)
    return a, b


def test_a_model_differing_beyond_the_axis_is_refused_even_forced(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _definition_changed(runs, lambda d: d.update(model={"model": "scripted/other"}))
    expected = [
        "skill-eval: compare: A and B differ in model (unset vs scripted/other) in group "
        f"{GROUP} ({_definitions(a, b)}), not only in revision: compare results that differ in "
        "one axis, or pass --axis model"
    ]
    for argv in ((), ("--axis", "revision"), ("--force",)):
        code, out, err = compare(capsys, str(a), str(b), *argv)
        assert (code, out, err.splitlines()) == (2, "", expected)
    code, out, err = compare(capsys, str(a), str(b), "--axis", "model")
    assert (code, err) == (0, "")
    assert "forced" not in out


def test_a_definition_differing_beyond_every_axis_is_refused_naming_both_fingerprints(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _definition_changed(runs, lambda d: d.update(input={"prompt": "Something else."}))
    # One group file saved differently (as an option may change it): the saved definitions'
    # own fingerprints tell the sides apart.
    err = compare(capsys, str(a), str(b))[2]
    prints = re.findall(r"sha256:[0-9a-f]{12}", err)
    assert len(set(prints)) == 2, err

    def new_sha(invocation: dict[str, Any]) -> None:
        for group in invocation["definitions"][0]["groups"]:
            if group["id"] == GROUP:
                group["sha256"] = "c0ffee" * 10 + "0000"

    edit_json(b / "invocation.json", new_sha)
    for axis in ("revision", "model", "host"):
        code, out, err = compare(capsys, str(a), str(b), "--axis", axis, "--force")
        assert (code, out) == (2, "")
        assert err.splitlines() == [
            f"skill-eval: compare: A and B differ in the definition of group {GROUP} "
            f"(sha256:b1b5ccb02502 vs sha256:c0ffeec0ffee; input.prompt; {_definitions(a, b)}), "
            f"not only in {axis}: "
            "use results run from the same group definitions, differing in one axis"
        ]


def test_only_a_missing_definition_is_overridden_by_force(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = copy_result(runs, "a"), copy_result(runs, "b")
    (b / "groups" / GROUP / "definition.json").unlink()
    missing = f"group {GROUP}: {b}/groups/{GROUP}: definition.json is missing"
    code, out, err = compare(capsys, str(a), str(b))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"skill-eval: compare: {missing}, so A and B cannot be checked for differences beyond "
        "the axis; use results whose definitions are all present, or pass --force to compare "
        "anyway"
    ]
    code, out, err = compare(capsys, str(a), str(b), "--force")
    assert (code, err) == (0, "")
    assert f"forced\t{missing}" in out.splitlines()


def test_each_axis_allows_only_its_own_fields(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _definition_changed(runs, lambda d: d.update(runtime={"host": "claude-code"}))
    assert compare(capsys, str(a), str(b), "--axis", "host")[0] == 0
    code, _, err = compare(capsys, str(a), str(b), "--axis", "model", "--force")
    assert code == 2
    assert (
        f"differ in host (unset vs claude-code) in group {GROUP} ({_definitions(a, b)}), "
        "not only in model"
    ) in err

    def new_source(d: dict[str, Any]) -> None:
        d.pop("runtime")
        d["variants"]["candidate"]["source"] = {"kind": "git", "revision": "HEAD~1"}

    edit_json(b / "groups" / GROUP / "definition.json", new_source)
    assert compare(capsys, str(a), str(b), "--axis", "revision")[0] == 0
    code, _, err = compare(capsys, str(a), str(b), "--axis", "host", "--force")
    assert code == 2
    assert err.splitlines() == [
        'skill-eval: compare: A and B differ in revision ({"kind":"working-tree"} vs '
        f'{{"kind":"git","revision":"HEAD~1"}}) in group {GROUP}\'s variants.candidate.source '
        f"({_definitions(a, b)}), not only in host: compare results that differ in one axis, "
        "or pass --axis revision"
    ]


def test_a_group_only_one_side_ran_is_named(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = copy_result(runs, "a"), copy_result(runs, "b")
    edit_json(b / "summary.json", lambda s: s.update(groups=s["groups"][:1]))
    out = compare(capsys, str(a), str(b))[1]
    assert f"only-in\ta\t{GROUP}" in out.splitlines()
    assert all(r[2] != GROUP for r in rows(out))


def test_fail_on_regression_exits_one_naming_each_regressed_row(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = copy_result(runs, "a"), copy_result(runs, "b")
    assert compare(capsys, str(a), str(b), "--fail-on", "regression")[:3:2] == (0, "")
    set_check(b, GROUP, "candidate-entry", "fail")
    code, out, err = compare(capsys, str(a), str(b), "--fail-on", "regression")
    assert code == 1
    assert out.splitlines()[0] == "Compare a -> b axis=revision regressions=2"
    assert err.splitlines() == [
        f"skill-eval: regression: check {GROUP}/candidate-entry (candidate) a=1/1 b=0/1",
        f"skill-eval: regression: comparison {GROUP}/entry-in-fixed (candidate) a=1/1 b=0/1",
    ]
    # Without --fail-on the report is all there is: exit 0, as before.
    assert compare(capsys, str(a), str(b))[0] == 0


def test_fail_on_significant_regression_needs_more_than_one_flip(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = copy_result(runs, "a"), copy_result(runs, "b")
    set_check(b, GROUP, "candidate-entry", "fail")
    # One trial each way: a flip, but one-sided Fisher p = 1/2 is no evidence.
    code, _, err = compare(capsys, str(a), str(b), "--fail-on", "significant-regression")
    assert (code, err) == (0, "")
    before, after, _ = _regressed(runs, 6)
    code, _, err = compare(capsys, str(before), str(after), "--fail-on", "significant-regression")
    assert code == 1
    # 6/6 -> 0/6: one-sided Fisher p = 1 / C(12, 6) = 1/924; 14 rows (8 checks, 3 comparisons
    # on both sides) make Holm's adjusted p of the two smallest 14/924 and 13/924 -> 0.01515.
    assert err.splitlines() == [
        f"skill-eval: significant regression: check {GROUP}/candidate-entry (candidate) "
        "a=6/6 b=0/6: Holm-adjusted p=0.01515",
        f"skill-eval: significant regression: comparison {GROUP}/entry-in-fixed (candidate) "
        "a=6/6 b=0/6: Holm-adjusted p=0.01515",
    ]
    code, _, err = compare(
        capsys, str(before), str(after), "--fail-on", "significant-regression", "--alpha", "0.01"
    )
    assert (code, err) == (0, "")


def test_results_from_different_hosts_are_refused_along_another_axis(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = copy_result(runs, "a"), copy_result(runs, "b")
    for group in ("natural-activation", GROUP):
        shutil.move(b / "groups" / group, b / "groups" / f"{group}@claude-code")

    def on_claude(summary: dict[str, Any]) -> None:
        for record in summary["groups"]:
            record["host"] = "claude-code"

    edit_json(b / "summary.json", on_claude)
    code, out, err = compare(capsys, str(a), str(b))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "skill-eval: compare: A and B differ in host (pi vs claude-code), not only in revision: "
        "compare results that differ in one axis, or pass --axis host"
    ]
    assert compare(capsys, str(a), str(b), "--axis", "model")[0] == 2
    assert compare(capsys, str(a), str(b), "--force")[0] == 2
    code, out, err = compare(capsys, str(a), str(b), "--axis", "host")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "Compare a -> b axis=host regressions=0"
