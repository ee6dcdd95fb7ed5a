"""Trigger rates from a suite of positive and negative description groups, over two trials.

The candidate reads its skill on every positive group and on no negative one; the baseline has
no target. One positive candidate's script ends after its first reply, so that run ends
`infrastructure-failed` when the subject asks for more: it
must be left out of the activation rate and counted beside it, never read as "not triggered".
The subjects run on the fastest host: the rates are computed from the evidence alone.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.files import read_json
from tests.support.roots import FAST_HOST, Group, build, fast_dir, runtime, skill, variant
from tests.support.runs import aggregates, results, skill_eval_args

pytestmark = [pytest.mark.pi, pytest.mark.codex]

READ = {
    "text": "This is what the changelog-keeper skill is for; reading it.",
    "tool_calls": [{"name": "read", "arguments": {"path": "{{skill:0}}/SKILL.md"}}],
}
REPLY = {"text": "Done."}


def _group(group_id: str, prompt: str, expect: str, candidate: list[Any] | None) -> Group:
    declared = "skills/changelog-keeper"
    return Group(
        id=group_id,
        type="description",
        turns=[prompt],
        tools=["read"],
        runtime=runtime(host=FAST_HOST),
        candidate=variant([declared], 0),
        expectations=[
            {
                "id": f"{name}-read",
                "kind": "skill-read",
                "variant": name,
                "expect": expect,
                **({"turn": 1} if expect != "never" else {}),
                "comparison": "read",
            }
            for name in ("baseline", "candidate")
        ],
        scripts={"baseline": [REPLY]} | ({"candidate": candidate} if candidate else {}),
    )


def test_trigger_rates_exclude_and_count_an_infrastructure_failure(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "root"
    skill(root, "changelog-keeper")
    groups = [
        _group(
            "log-change", "Log in the changelog that export is faster.", "by-turn", [READ, REPLY]
        ),
        # A script that ends too early: the replay refuses the subject's second request.
        _group("note-fix", "Note the CSV fix in the changelog.", "by-turn", [READ]),
        _group("greeting", "Say hello.", "never", [REPLY]),
        _group("arithmetic", "What is 2 + 2?", "never", [REPLY]),
    ]
    suite = build(root, groups)
    result = pytester.runpytest_subprocess(
        *skill_eval_args(root, "--skill-eval-trials", "2", suite=suite)
    )
    # The failed run fails its item under the default --skill-eval-fail-on infrastructure.
    assert result.ret == 1, result.stdout.str()
    for trial_dir in results(root):
        failed = read_json(trial_dir / "groups" / fast_dir("note-fix") / "candidate" / "run.json")
        assert failed["state"] == "infrastructure-failed"

    (aggregate_dir,) = aggregates(root)
    (rates,) = read_json(aggregate_dir / "aggregate.json")["triggerRates"]
    assert rates["skill"]["declaredPath"] == "skills/changelog-keeper"
    assert len(rates["skill"]["sha256"]) == 64
    assert rates["groups"] == ["arithmetic", "greeting", "log-change", "note-fix"]
    candidate, baseline = rates["variants"]["candidate"], rates["variants"]["baseline"]
    # Positives: 2 groups × 2 trials, the failed run of each trial left out and counted.
    assert candidate["activation"]["read"] == 2
    assert candidate["activation"]["observed"] == 2
    assert candidate["activation"]["rate"] == 1.0
    assert candidate["activation"]["excluded"] == {
        "invalid": 0,
        "infrastructure-failed": 2,
        "cancelled": 0,
    }
    assert (candidate["falseActivation"]["read"], candidate["falseActivation"]["observed"]) == (
        0,
        4,
    )
    assert (baseline["activation"]["read"], baseline["activation"]["observed"]) == (0, 4)
    assert baseline["activation"]["excluded"]["infrastructure-failed"] == 0
    assert baseline["targets"] == [None]
    assert (baseline["falseActivation"]["read"], baseline["falseActivation"]["observed"]) == (0, 4)
    # 2/2 against 0/4: Newcombe's hybrid interval is 1 − sqrt(0.6576² + 0.4899²) = 0.1800 to 1.
    difference = rates["difference"]["activation"]
    assert difference["difference"] == 1.0
    assert [round(x, 4) for x in difference["interval"]] == [0.18, 1.0]
    label = f"skills/changelog-keeper@{rates['skill']['sha256'][:12]}"
    lines = result.stdout.lines
    assert (
        f"  trigger {label} activation: baseline 0/4 95% CI [0.00, 0.49]; "
        "candidate 2/2 95% CI [0.34, 1.00], excluded infrastructure-failed:2"
    ) in lines
    assert (
        f"  trigger {label} false-activation: baseline 0/4 95% CI [0.00, 0.49]; "
        "candidate 0/4 95% CI [0.00, 0.49]"
    ) in lines
