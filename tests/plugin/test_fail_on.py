"""--skill-eval-fail-on changes pytest outcomes only, never evidence (on the fastest host: the
policy reads grades, never the host)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.files import read_json
from tests.support.roots import answers_root, fast_dir, write_answer, write_script
from tests.support.runs import results, run

pytestmark = [pytest.mark.pi, pytest.mark.codex]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """`improves`: baseline fails, candidate passes. `regresses`: the other way round."""
    return answers_root(
        tmp_path / "root",
        {
            "improves/baseline": "no",
            "improves/candidate": "yes",
            "regresses/baseline": "yes",
            "regresses/candidate": "no",
        },
    )


def _facts(root: Path) -> list[tuple[str, str, str]]:
    facts = []
    result_dir = results(root)[-1]
    for group in ("improves", "regresses"):
        grade_path = result_dir / "groups" / fast_dir(group) / "deterministic-grade.json"
        if not grade_path.is_file():
            continue
        grade = read_json(grade_path)
        facts += [(group, c["id"], c["state"]) for c in grade["checks"]]
        facts += [(group, c["id"], c["transition"]) for c in grade["comparisons"]]
    return facts


@pytest.mark.parametrize(
    ("mode", "both_groups", "only_improves"),
    [
        ("infrastructure", 0, 0),
        ("candidate", 1, 0),
        ("any", 1, 1),
        ("regression", 1, 0),
    ],
)
def test_exit_code_per_mode_on_the_same_evidence(
    pytester: pytest.Pytester, root: Path, mode: str, both_groups: int, only_improves: int
) -> None:
    everything = run(pytester, root, f"--skill-eval-fail-on={mode}")
    assert everything.ret == both_groups, everything.stdout.str()
    assert _facts(root) == [
        ("improves", "baseline-says-yes", "fail"),
        ("improves", "candidate-says-yes", "pass"),
        ("improves", "says-yes", "fail-to-pass"),
        ("regresses", "baseline-says-yes", "pass"),
        ("regresses", "candidate-says-yes", "fail"),
        ("regresses", "says-yes", "pass-to-fail"),
    ]
    # Whatever the mode, every run itself is ordinary, complete evidence.
    summary = read_json(results(root)[-1] / "summary.json")
    assert summary["state"] == "complete"
    improves = run(pytester, root, f"--skill-eval-fail-on={mode}", "-k", "improves")
    assert improves.ret == only_improves, improves.stdout.str()


def test_infrastructure_failures_fail_every_mode(pytester: pytest.Pytester, root: Path) -> None:
    # A script that ends before the subject does (a missing one is refused at collection).
    short = write_script(root / "scripts" / "improves" / "candidate.yaml", write_answer("yes")[:1])
    result = run(pytester, root, "-k", "improves")
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"*candidate run is infrastructure-failed*{short}*"])
    record = read_json(
        results(root)[-1] / "groups" / fast_dir("improves") / "candidate" / "run.json"
    )
    assert record["state"] == "infrastructure-failed"
    assert record["error"]["kind"] == "infrastructure"
