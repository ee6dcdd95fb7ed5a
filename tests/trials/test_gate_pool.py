"""The significant-regression gate pools earlier sealed trials of the same definitions.

Each trial is a resealed copy of the committed view fixture (three comparisons, all
fail-to-pass) in one results directory, its `entry-in-fixed` turned pass-to-fail or
pass-to-pass, so each test states the counts it introduces. Result ids begin with their
creation time: the names below sort in the order the trials ran.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.analysis import gate
from pytest_skill_eval.analysis.gate import evaluate, pooled, rejected
from pytest_skill_eval.analysis.significance import sequential_regression_p
from pytest_skill_eval.evidence import layout, sealed_root, write_manifest, write_seal
from pytest_skill_eval.evidence.layout import INPUT_NAMES
from tests.views.conftest import build_result

GROUP = "changelog-entry"
ENTRY = f"{GROUP}/entry-in-fixed"


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


class Runs:
    """Sealed trials written one after the other into one results directory."""

    def __init__(self, tmp_path: Path) -> None:
        self.source = build_result(tmp_path / "source")
        self.dir = tmp_path / "root" / ".skill-eval" / "runs"
        self.count = 0

    def invocation(
        self,
        transitions: list[str],
        *,
        sha256: str | None = None,
        identical: bool = False,
        skill: str | None = None,
        inputs: dict[str, str] | None = None,
    ) -> list[Path]:
        """One invocation: a trial per transition of `entry-in-fixed`, sealed as a run seals.

        `sha256` replaces the group's recorded definition hash, `skill` its candidate's skill;
        `inputs` are the candidate's recorded inputs (none: a run from before they were).
        """
        return [
            self._trial(number, len(transitions), transition, sha256, identical, skill, inputs)
            for number, transition in enumerate(transitions, start=1)
        ]

    def _trial(
        self,
        number: int,
        trials: int,
        transition: str,
        sha256: str | None,
        identical: bool,
        skill: str | None,
        inputs: dict[str, str] | None = None,
    ) -> Path:
        self.count += 1
        trial = self.dir / f"202612010000{self.count:02d}-0000000{self.count % 10}"
        shutil.copytree(self.source, trial)
        group_dir = trial / "groups" / GROUP

        def invocation(data: dict[str, Any]) -> None:
            data["id"] = trial.name
            data["selection"]["trial"] = number
            data["selection"]["trials"] = trials
            data["nonce"] = f"invocation-{self.count - number}"  # shared by its trials
            if identical:
                data["identicalArms"] = True
            for group in data["definitions"][0]["groups"]:
                if group["id"] == GROUP and sha256 is not None:
                    group["sha256"] = sha256

        def run(data: dict[str, Any]) -> None:
            if skill is not None:
                data["resources"]["skills"][0]["sha256"] = skill
            if inputs is not None:
                data["inputs"] = inputs

        _edit(group_dir / "candidate" / "run.json", run)

        def grade(data: dict[str, Any]) -> None:
            for comparison in data["comparisons"]:
                if comparison["id"] == "entry-in-fixed":
                    comparison["transition"] = transition

        _edit(group_dir / "deterministic-grade.json", grade)
        _edit(trial / layout.INVOCATION, invocation)
        reseal(trial)
        return trial


def reseal(trial: Path, nonces: bool = True) -> None:
    """Seal a trial as a run seals it; with `nonces`, each run its own (as every run has)."""
    for group_dir in sorted((trial / "groups").iterdir()):
        hashes = {}
        for variant in ("baseline", "candidate"):
            path = group_dir / variant / "run.json"
            if nonces:
                _edit(path, lambda data, v=variant: data.update(nonce=f"{trial.name}/{v}"))
            hashes[variant] = hashlib.sha256(path.read_bytes()).hexdigest()

        def rebind(data: dict[str, Any], hashes: dict[str, str] = hashes) -> None:
            for variant, sha in hashes.items():
                data["evidence"][variant]["sha256"] = sha

        _edit(group_dir / "deterministic-grade.json", rebind)
        (group_dir / layout.MANIFEST).unlink()
        write_manifest(group_dir)
    (trial / layout.SEAL).unlink()
    write_seal(trial)


def _tested(runs: Runs, current: list[Path]) -> dict[str, gate.Tested]:
    pool = pooled(runs.dir, current)
    return {t.name: t for t in evaluate(current, alpha=0.05, pool=pool)}


def test_re_running_until_green_still_fails_on_the_pooled_trials(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    runs.invocation(["pass-to-fail"] * 4)  # on its own p = 0.229, times 3 by Holm: passes
    runs.invocation(["pass-to-fail"] * 4)
    green = runs.invocation(["pass-to-fail", "pass-to-pass", "pass-to-pass"])
    # On its own trials the third invocation passes (one pass-to-fail pair: p = 1/2) ...
    assert rejected(green, alpha=0.05) == []
    # ... pooled with the two before it, nine pass-to-fail pairs: the always-valid p-value over
    # the pooled sequence is 0.01053, Holm x3 = 0.0316.
    pool = pooled(runs.dir, green)
    assert not pool.set_aside
    assert len(pool.trials) == 11
    assert rejected(green, alpha=0.05, pool=pool) == [
        f"significant regression: {ENTRY}: pass-to-fail 9, fail-to-pass 0, Holm-adjusted "
        "p=0.03159 (pooled over 11 trial(s) of 3 invocation(s))"
    ]
    tested = _tested(runs, green)[ENTRY]
    assert (tested.pass_to_fail, tested.trials) == (9, 11)
    assert tested.p == pytest.approx(sequential_regression_p(["pass-to-fail"] * 9))


def test_once_the_gate_fails_no_green_re_run_of_the_same_inputs_passes_it(
    tmp_path: Path,
) -> None:
    # Six pass-to-fail pairs in one run, then re-runs whose trials all pass: each gated run
    # tests everything so far. Exact one-look p-values would fail the first (2^-6, x3 = 0.047)
    # and pass the next once its green trials join (0.069 x3): a pass made by re-running. The
    # always-valid p-value never rises, so the outcomes never go from failed back to passed.
    runs = Runs(tmp_path)
    outcomes = []
    for transitions in (["pass-to-fail"] * 6, ["pass-to-fail"] * 3, ["pass-to-pass"] * 3):
        current = runs.invocation(transitions)
        outcomes.append(bool(rejected(current, alpha=0.05, pool=pooled(runs.dir, current))))
    assert outcomes == [False, True, True]


@pytest.mark.parametrize(
    "changed", [{"sha256": "0" * 64}, {"skill": "1" * 64}], ids=["definition", "skill"]
)
def test_an_edited_definition_or_skill_is_not_pooled_with_the_trials_before_it(
    tmp_path: Path, changed: dict[str, str]
) -> None:
    runs = Runs(tmp_path)
    for _ in range(2):
        runs.invocation(
            ["pass-to-fail"] * 3, sha256=changed.get("sha256"), skill=changed.get("skill")
        )
    current = runs.invocation(["pass-to-fail", "pass-to-pass", "pass-to-pass"])
    tested = _tested(runs, current)
    entry = tested[ENTRY]
    assert (entry.pass_to_fail, entry.trials, entry.invocations) == (1, 3, 1)
    assert not entry.rejected
    # The other group's definition did not change: its comparison pools all nine trials.
    other = tested["natural-activation/skill-read-on-first-turn"]
    assert (other.fail_to_pass, other.trials, other.invocations) == (9, 9, 3)


def test_a_run_whose_recorded_inputs_differ_is_not_pooled(tmp_path: Path) -> None:
    # The gate decides "the same test" by the inputs reuse and resume compare: another host
    # version is another test, and so is a run from before runs recorded their inputs.
    runs = Runs(tmp_path)
    inputs = {name: f"sha256:{name}" for name in INPUT_NAMES}
    runs.invocation(["pass-to-fail"] * 3, inputs=inputs | {"host-version": "0.0.1"})
    runs.invocation(["pass-to-fail"] * 3)
    runs.invocation(["pass-to-fail"] * 3, inputs=inputs)
    current = runs.invocation(["pass-to-fail", "pass-to-pass", "pass-to-pass"], inputs=inputs)
    entry = _tested(runs, current)[ENTRY]
    assert (entry.pass_to_fail, entry.trials, entry.invocations) == (4, 6, 2)


def test_an_earlier_result_that_does_not_verify_is_skipped_and_named(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    earlier = runs.invocation(["pass-to-fail"] * 6)
    damaged = earlier[0] / "groups" / GROUP / "deterministic-grade.json"
    damaged.write_bytes(damaged.read_bytes() + b" ")
    (earlier[1] / layout.SEAL).write_text("{", encoding="utf-8")  # a seal that is not JSON
    floor = runs.invocation(["pass-to-fail"] * 6, identical=True)  # a noise floor: never pooled
    current = runs.invocation(["pass-to-fail"])
    pool = pooled(runs.dir, current)
    assert pool.set_aside.lines() == [
        "significant-regression gate: set aside 2 results: seal does not verify (skill-eval "
        f"verify names what changed): {earlier[0].name}, {earlier[1].name}"
    ]
    assert pool.trials == [*earlier[2:], *current]
    assert not set(floor) & set(pool.trials)
    entry = _tested(runs, current)[ENTRY]
    # Four verified pass-to-fail pairs before, one now: 2^-5 x 3 = 0.094, not rejected; with
    # the two unverified ones it would have been.
    assert (entry.pass_to_fail, entry.trials, entry.invocations) == (5, 5, 2)
    assert not entry.rejected


def _copy(trial: Path, name: str) -> Path:
    """A byte copy of a sealed result under another id (it verifies: ids are not sealed)."""
    return Path(shutil.copytree(trial, trial.parent / name))


def test_copies_of_earlier_results_under_new_ids_count_once_and_are_named(
    tmp_path: Path,
) -> None:
    runs = Runs(tmp_path)
    earlier = runs.invocation(["pass-to-fail"] * 3)
    copies = [_copy(trial, f"20991231000{n}00-copy{n}") for n, trial in enumerate(earlier)]
    current = runs.invocation(["pass-to-fail"])
    pool = pooled(runs.dir, current)
    assert pool.trials == [*earlier, *current]
    assert pool.set_aside.lines() == [
        "significant-regression gate: set aside 3 results: duplicate (the same subject runs, "
        "counted once): "
        + ", ".join(f"{c.name} (of {e.name})" for c, e in zip(copies, earlier, strict=True))
    ]
    entry = _tested(runs, current)[ENTRY]
    assert (entry.pass_to_fail, entry.trials, entry.invocations) == (4, 4, 2)
    assert pool.lines()[0].startswith("significant-regression gate: pooled 4 results: ")
    for trial in pool.trials:
        assert f"{trial.name} sha256:{sealed_root(trial)}" in pool.lines()[0]


def test_a_copy_of_a_result_from_before_nonces_is_known_by_its_sealed_records(
    tmp_path: Path,
) -> None:
    runs = Runs(tmp_path)
    earlier = runs.invocation(["pass-to-fail"] * 2)
    for trial in earlier:  # as results were sealed before runs had a nonce (each run its times)
        for run in trial.glob("groups/*/*/run.json"):
            _edit(run, lambda data: data.update(completedAt=data.pop("nonce")))
        reseal(trial, nonces=False)
    copy = _copy(earlier[1], "20991231000000-copy")
    current = runs.invocation(["pass-to-fail"])
    pool = pooled(runs.dir, current)
    assert pool.trials == [*earlier, *current]
    assert [line.split(": ", 3)[-1] for line in pool.set_aside.lines()] == [
        f"{copy.name} (of {earlier[1].name})"
    ]


def test_a_copy_whose_records_were_rewritten_is_the_same_run_by_its_nonce(
    tmp_path: Path,
) -> None:
    # A merge or a reuse rewrites the paths a run recorded: other bytes, the same observation.
    runs = Runs(tmp_path)
    (earlier,) = runs.invocation(["pass-to-fail"])
    moved = _copy(earlier, "20991231000000-moved")
    for run in moved.glob("groups/*/*/run.json"):
        _edit(run, lambda data: data.update(workspace=f"{moved}/workspace"))
    reseal(moved, nonces=False)
    current = runs.invocation(["pass-to-fail"])
    pool = pooled(runs.dir, current)
    assert pool.trials == [earlier, *current]
    assert [line.split(": ", 3)[-1] for line in pool.set_aside.lines()] == [
        f"{moved.name} (of {earlier.name})"
    ]


def test_results_of_other_inputs_are_set_aside_and_named(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    other = runs.invocation(["pass-to-fail"] * 2, sha256="0" * 64, skill="1" * 64)
    for trial in other:  # no group of theirs ran from these definitions
        _edit(trial / layout.INVOCATION, lambda data: _rehash_every_group(data))
        reseal(trial)
    current = runs.invocation(["pass-to-fail"])
    pool = pooled(runs.dir, current)
    assert pool.trials == current
    assert pool.set_aside.lines() == [
        "significant-regression gate: set aside 2 results: other inputs (a changed definition "
        f"or input is another test): {other[0].name}, {other[1].name}"
    ]


def _rehash_every_group(invocation: dict[str, Any]) -> None:
    for group in invocation["definitions"][0]["groups"]:
        group["sha256"] = "2" * 64
