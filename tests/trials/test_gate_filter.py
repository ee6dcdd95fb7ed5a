"""The gate reads an earlier result's `invocation.json` before verifying it, and verifies only
those that may have run from this invocation's definitions: what that unverified file claims
can keep a result out, never let one in (`analysis/gate.py`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.analysis.admission import OTHER_INPUTS, UNVERIFIED
from pytest_skill_eval.analysis.gate import pooled
from pytest_skill_eval.evidence import layout
from tests.support.verifications import record_verifications
from tests.trials.test_gate_pool import Runs, reseal


@pytest.fixture
def verifications(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each result `skill-eval verify`'s code reads in full, in order (a cache of this test's)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return record_verifications(monkeypatch)


def _claim_definitions(trial: Path, sha256: str | None) -> dict[str, str]:
    """Give every group of `trial`'s `invocation.json` the definition `sha256` (None: keep
    them); the definitions it held before, by group id."""
    path = trial / layout.INVOCATION
    data = json.loads(path.read_text(encoding="utf-8"))
    groups = data["definitions"][0]["groups"]
    before = {group["id"]: group["sha256"] for group in groups}
    for group in groups:
        group["sha256"] = sha256 or group["sha256"]
    path.write_text(json.dumps(data), encoding="utf-8")
    return before


def test_a_result_of_other_definitions_is_set_aside_without_being_verified(
    tmp_path: Path, verifications: list[Path]
) -> None:
    runs = Runs(tmp_path)
    same = runs.invocation(["pass-to-fail"] * 2)
    other = runs.invocation(["pass-to-fail"] * 2)
    for trial in other:
        _claim_definitions(trial, "0" * 64)
        reseal(trial)  # a real run of an edited definition: it verifies
    current = runs.invocation(["pass-to-fail"])
    pool = pooled(runs.dir, current)
    assert pool.trials == [*same, *current]
    assert pool.set_aside.reasons == {OTHER_INPUTS: [t.name for t in other]}
    assert verifications == same  # the others were never read beyond their invocation.json


def test_a_result_claiming_these_definitions_is_verified_and_counts_only_if_it_verifies(
    tmp_path: Path, verifications: list[Path]
) -> None:
    runs = Runs(tmp_path)
    (other,) = runs.invocation(["pass-to-fail"])
    ours = _claim_definitions(other, "0" * 64)
    reseal(other)
    # Planted: a copy of the other result whose unsealed claim now names these definitions.
    planted = Path(shutil.copytree(other, other.with_name("20261201000050-planted0")))
    path = planted / layout.INVOCATION
    data = json.loads(path.read_text(encoding="utf-8"))
    for group in data["definitions"][0]["groups"]:
        group["sha256"] = ours[group["id"]]
    path.write_text(json.dumps(data), encoding="utf-8")
    current = runs.invocation(["pass-to-fail"])
    pool = pooled(runs.dir, current)
    assert pool.trials == current
    assert pool.set_aside.reasons == {OTHER_INPUTS: [other.name], UNVERIFIED: [planted.name]}
    assert verifications == [planted]


def test_a_result_that_matches_by_one_group_of_several_is_verified_and_pooled(
    tmp_path: Path, verifications: list[Path]
) -> None:
    runs = Runs(tmp_path)
    (earlier,) = runs.invocation(["pass-to-fail"], sha256="0" * 64)  # one group edited
    current = runs.invocation(["pass-to-fail"])
    assert pooled(runs.dir, current).trials == [earlier, *current]
    assert verifications == [earlier]


def test_an_earlier_invocation_json_the_gate_cannot_read_rules_nothing_out(
    tmp_path: Path, verifications: list[Path]
) -> None:
    runs = Runs(tmp_path)
    damaged = runs.invocation(["pass-to-fail"] * 2)
    path = damaged[0] / layout.INVOCATION
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["definitions"][0]["groups"][0]["sha256"]
    path.write_text(json.dumps(data), encoding="utf-8")
    (damaged[1] / layout.INVOCATION).write_text("{", encoding="utf-8")
    current = runs.invocation(["pass-to-fail"])
    pool = pooled(runs.dir, current)
    assert pool.trials == current
    assert pool.set_aside.reasons == {UNVERIFIED: [t.name for t in damaged]}
    assert verifications == damaged
