"""Which noise floor decides: one whose trials and record verify, of the same inputs, all the
trials of one invocation, and no copy of another.

The floors are aggregates, written as a run writes them, over resealed trials of identical arms
(`Runs` of the gate's tests); a disagreement is a pass-to-fail trial of `entry-in-fixed`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.analysis.floor_choice import deciding, fingerprint
from pytest_skill_eval.analysis.trials import write_aggregate
from pytest_skill_eval.evidence import read
from pytest_skill_eval.evidence.records import FlakyGate
from tests.support.verifications import record_verifications
from tests.trials.test_gate_pool import Runs


def _floor(runs: Runs, trials: list[Path], name: str) -> Path:
    """An aggregate over `trials` as a run writes it, renamed so that ids sort as `name` does."""
    written = write_aggregate(runs.dir, trials, len(trials), None)
    return Path(shutil.move(written, runs.dir / name))


def _decided(runs: Runs, trial: Path) -> FlakyGate:
    inputs = fingerprint(read.mapping(read.load_invocation(trial)))
    found = deciding(runs.dir, inputs)
    assert found is not None
    return found


def test_an_aggregate_mixing_the_trials_of_two_floors_is_set_aside(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    older = runs.invocation(["pass-to-fail", "pass-to-pass"], identical=True)  # disagreed
    newer = runs.invocation(["pass-to-pass", "pass-to-pass"], identical=True)  # agreed
    _floor(runs, older, "20261202000001-older")
    chosen = _floor(runs, newer, "20261202000002-newer")
    assert _decided(runs, newer[0])["noiseFloor"] == chosen.name
    # Trial 1 of the older floor and trial 2 of the newer: numbered 1 and 2 of 2, it verifies
    # (its record is what its trials give) and is no part of either floor.
    mixed = _floor(runs, [older[0], newer[1]], "20261202000003-mixed")
    decided = _decided(runs, newer[0])
    assert decided["noiseFloor"] == chosen.name
    assert decided["setAside"] == [
        "noise floor: set aside 1 aggregate: not the trials of one invocation (a floor is all "
        f"the trials of one run): {mixed.name}"
    ]


def test_an_aggregate_of_part_of_a_floor_is_set_aside(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    floor = runs.invocation(["pass-to-fail", "pass-to-pass"], identical=True)
    genuine = _floor(runs, floor, "20261202000001-genuine")
    part = _floor(runs, floor[1:], "20261202000002-part")  # the trial that agreed, alone
    decided = _decided(runs, floor[0])
    assert decided["noiseFloor"] == genuine.name
    assert decided["checks"]  # the disagreement of its first trial counts
    assert decided["setAside"] == [
        "noise floor: set aside 1 aggregate: not the trials of one invocation (a floor is all "
        f"the trials of one run): {part.name}"
    ]


def test_a_floor_of_other_inputs_is_set_aside_without_its_trials_being_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    runs = Runs(tmp_path)
    other = runs.invocation(["pass-to-pass"] * 2, identical=True, sha256="0" * 64)
    floor = runs.invocation(["pass-to-pass"] * 2, identical=True)
    _floor(runs, other, "20261202000001-other")
    chosen = _floor(runs, floor, "20261202000002-chosen")
    verifications = record_verifications(monkeypatch)
    newer = _floor(runs, other, "20261202000003-newer")  # of other inputs, after the chosen
    decided = _decided(runs, floor[0])
    assert decided["noiseFloor"] == chosen.name
    assert decided["setAside"] == [
        "noise floor: set aside 1 aggregate: other inputs (a changed definition or input is "
        f"another test): {newer.name}"
    ]
    assert verifications == floor  # the other floors were read no further than their records
