"""Which checks a measured noise floor keeps from gating: the flaky check, its pair, their
comparison; nothing else."""

from __future__ import annotations

from pytest_skill_eval.analysis.noise_floor import flaky_keys, ignored

FLOOR = {
    "trials": 3,
    "bound": 0.0,
    "perCheck": {
        "g@codex::candidate-ok": {
            "group": "g@codex",
            "baseline": "baseline-ok",
            "comparison": "ok",
            "disagreements": 1,
            "trials": 3,
            "flaky": True,
        },
        "g@codex::candidate-steady": {
            "group": "g@codex",
            "baseline": "baseline-steady",
            "comparison": "steady",
            "disagreements": 0,
            "trials": 3,
            "flaky": False,
        },
    },
}


def test_a_flaky_check_its_baseline_pair_and_their_comparison_do_not_gate() -> None:
    flaky = flaky_keys(FLOOR)
    assert flaky == ["g@codex::baseline-ok", "g@codex::candidate-ok"]
    assert ignored(flaky, "g@codex", {"id": "candidate-ok"})
    assert ignored(flaky, "g@codex", {"id": "baseline-ok"})
    comparison = {
        "id": "ok",
        "transition": "pass-to-fail",
        "baseline": {"check": "baseline-ok"},
        "candidate": {"check": "candidate-ok"},
    }
    assert ignored(flaky, "g@codex", comparison)


def test_steady_checks_and_other_groups_still_gate() -> None:
    flaky = flaky_keys(FLOOR)
    assert not ignored(flaky, "g@codex", {"id": "candidate-steady"})
    assert not ignored(flaky, "other@codex", {"id": "candidate-ok"})
    assert not ignored(flaky, "g", {"id": "candidate-ok"})  # the floor was measured on codex
