"""A planned run of several trials, split into shards on two "machines" and merged, gives the trial
facts and aggregate of a single-machine `--skill-eval-trials 2` run; merging is deterministic
(byte-identical outputs from the same shards) and the merged evidence is a copy that a later
change to a shard cannot reach. On Codex, the real host that starts fastest: what is under test
is the plan, the shards and the merge, which never depend on the host."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from tests.support.files import read_json
from tests.support.roots import (
    VARIANTS,
    body_group,
    fast_dir,
    make_root,
    on_fast_host,
    write_answer,
)
from tests.support.runs import run_detached
from tests.support.shared import once, shared_setup

pytestmark = [pytest.mark.pi, pytest.mark.codex]

GROUPS = ("g0", "g1")
G0, G1 = (fast_dir(g) for g in GROUPS)  # the result directories of a Codex run


def _trial_facts(result_dir: Path) -> dict[str, Any]:
    """What a trial found, without ids or timestamps (which differ between two invocations)."""
    summary = read_json(result_dir / "summary.json")
    facts: dict[str, Any] = {
        "summary": (summary["state"], summary["trial"]),
        "groups": [(g["id"], g["trial"], g["state"], g["variants"]) for g in summary["groups"]],
    }
    for group_dir in sorted((result_dir / "groups").iterdir()):
        grade = read_json(group_dir / "deterministic-grade.json")
        facts[group_dir.name] = {
            "checks": [(c["id"], c["state"], json.dumps(c["observed"])) for c in grade["checks"]],
            "comparisons": [(c["id"], c["transition"]) for c in grade["comparisons"]],
            "runs": [
                read_json(group_dir / v / "run.json")["state"] for v in ("baseline", "candidate")
            ],
        }
    return facts


def _aggregate_facts(aggregate_dir: Path) -> dict[str, Any]:
    record = read_json(aggregate_dir / "aggregate.json")
    return {
        "state": record["state"],
        "requestedTrials": record["requestedTrials"],
        "trials": [t["state"] for t in record["trials"]],
        "identical": record["inputs"]["identical"],
        "groups": [_timeless(group) for group in record["groups"]],
        "triggerRates": record["triggerRates"],
    }


def _timeless(group: dict[str, Any]) -> dict[str, Any]:
    """A group's aggregate without wall times: the one usage fact two runs never share."""
    usage = group.get("usage")
    if usage is None:
        return group
    arms = {
        v: {k: f for k, f in facts.items() if k != "wallTimeMs"}
        for v, facts in usage["arms"].items()
    }
    change = {k: c for k, c in usage["change"].items() if k != "wallTimeMs"}
    return {**group, "usage": {**usage, "arms": arms, "change": change}}


def _tree(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _build(base: Path) -> None:
    """A `--skill-eval-trials 2` run on one machine, and the same plan run as 2 shards."""
    groups = [body_group(g, **on_fast_host()) for g in GROUPS]
    scripts = {f"{g}/baseline": write_answer("no") for g in GROUPS}
    scripts |= {f"{g}/candidate": write_answer("yes") for g in GROUPS}
    scripts["g1/candidate-trial2"] = write_answer("no")  # trial 2 differs: the rates must say so
    source = make_root(base / "source", groups, scripts)
    serial = base / "serial"
    shutil.copytree(source, serial)
    done = run_detached(serial, "-n", "0", "--skill-eval-trials", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    plan = base / "plan.json"
    argv = ["plan", str(source / "suite.json"), "--root", str(source), "--trials", "2"]
    assert skill_eval([*argv, "--cassettes", str(source / "scripts"), "-o", str(plan)]) == 0
    for k in (1, 2):
        machine = base / f"machine{k}"
        shutil.copytree(source, machine)
        done = run_detached(machine, "--skill-eval-plan", str(plan), "--skill-eval-shard", f"{k}/2")
        assert done.returncode == 0, done.stdout + done.stderr
        (base / f"shard{k}.out").write_text(done.stdout, encoding="utf-8")


@pytest.fixture(scope="module")
@shared_setup
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The runs `_build` made, once for the whole test run (whichever worker gets here first)."""
    base = once(tmp_path_factory, "shard-trials", _build)
    plan = base / "plan.json"
    shards = [base / f"machine{k}" / ".skill-eval" / "runs" for k in (1, 2)]
    serial_runs = base / "serial" / ".skill-eval" / "runs"
    serial_results = sorted(
        (p for p in serial_runs.iterdir() if (p / "invocation.json").is_file()),
        key=lambda p: int(read_json(p / "summary.json")["trial"]),
    )
    (serial_aggregate,) = (p for p in serial_runs.iterdir() if (p / "aggregate.json").is_file())
    return {
        "base": base,
        "plan": plan,
        "shards": shards,
        "serial": serial_results,
        "serial_aggregate": serial_aggregate,
    }


def _merge(runs: dict[str, Any], name: str) -> Path:
    out: Path = runs["base"] / name
    assert skill_eval(["merge", str(runs["plan"]), *map(str, runs["shards"]), "-o", str(out)]) == 0
    return out


def test_two_trials_as_shards_merge_into_the_trials_and_aggregate_of_one_machine(
    runs: dict[str, Any],
) -> None:
    out = _merge(runs, "merged")
    plan = read_json(runs["plan"])
    merged = [out / r["id"] for r in plan["results"]]
    assert [_trial_facts(m) for m in merged] == [_trial_facts(s) for s in runs["serial"]]
    assert _trial_facts(merged[1])[G1]["comparisons"] == [("says-yes", "fail-to-fail")]
    aggregate = out / plan["aggregate"]
    assert _aggregate_facts(aggregate) == _aggregate_facts(runs["serial_aggregate"])
    rows = read_json(aggregate / "aggregate.json")["trials"]
    assert [row["id"] for row in rows] == [r["id"] for r in plan["results"]]
    for result in merged:
        assert skill_eval(["verify", str(result)]) == 0


def test_a_shard_lists_the_results_it_wrote_as_unmerged_never_unknown(
    runs: dict[str, Any],
) -> None:
    for k, shards in enumerate(runs["shards"], start=1):
        out = (runs["base"] / f"shard{k}.out").read_text(encoding="utf-8")
        assert "[unknown]" not in out
        written = sorted(p.parent.name for p in shards.rglob("groups") if p.is_dir())
        listed = sorted(line.split()[1] for line in out.splitlines() if line.startswith("result "))
        assert listed == written
        assert all(
            " [unmerged] trial " in line for line in out.splitlines() if line.startswith("result ")
        )


def test_merging_the_same_shards_twice_gives_byte_identical_outputs(runs: dict[str, Any]) -> None:
    first, second = _merge(runs, "first"), _merge(runs, "second")
    assert sorted(p.name for p in first.iterdir()) == sorted(p.name for p in second.iterdir())
    for result in sorted(first.iterdir()):
        assert _tree(result) == _tree(second / result.name), result.name
    # Merged timestamps come from the shards' records, never from the clock at merge time.
    shard_records = [read_json(p) for s in runs["shards"] for p in s.rglob("shard.json")]
    plan = read_json(runs["plan"])
    for trial in plan["results"]:
        invocation = read_json(first / trial["id"] / "invocation.json")
        summary = read_json(first / trial["id"] / "summary.json")
        assert invocation["startedAt"] == min(r["startedAt"] for r in shard_records)
        assert summary["completedAt"] == max(r["completedAt"] for r in shard_records)
    aggregate = read_json(first / plan["aggregate"] / "aggregate.json")
    assert aggregate["completedAt"] == max(r["completedAt"] for r in shard_records)
    # Merged again into the same place: every trial and the aggregate are proven already there.
    trees = {result.name: _tree(result) for result in first.iterdir()}
    _merge(runs, "first")
    assert {result.name: _tree(result) for result in first.iterdir()} == trees


def test_a_missing_unit_merges_the_same_way_twice(runs: dict[str, Any]) -> None:
    # A shard-missing unit's grade names its run records by the result's own path, so compare
    # two merges into the same (fresh) place.
    out, arrived = runs["base"] / "missing", str(runs["shards"][0])
    trees = []
    for _ in range(2):
        shutil.rmtree(out, ignore_errors=True)
        assert skill_eval(["merge", str(runs["plan"]), arrived, "-o", str(out)]) == 1
        trees.append({p.name: _tree(p) for p in sorted(out.iterdir())})
    assert trees[0] == trees[1]
    trial_one = read_json(runs["plan"])["results"][0]["id"]
    grade = read_json(out / trial_one / "groups" / G1 / "deterministic-grade.json")
    paths = [Path(grade["evidence"][v]["path"]) for v in ("baseline", "candidate")]
    assert paths == [out / trial_one / "groups" / G1 / v / "run.json" for v in VARIANTS]
    assert all(path.is_file() for path in paths)
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_merged_evidence_shares_no_inode_with_the_shards(runs: dict[str, Any]) -> None:
    # Copies of the shards, so that changing one below leaves the other tests' shards alone.
    shards = [runs["base"] / f"copied-shard{k}" for k in (1, 2)]
    for source, copy in zip(runs["shards"], shards, strict=True):
        shutil.copytree(source, copy, symlinks=True)
    out = runs["base"] / "copied"
    assert skill_eval(["merge", str(runs["plan"]), *map(str, shards), "-o", str(out)]) == 0
    inodes = {
        (st.st_dev, st.st_ino)
        for s in shards
        for p in s.rglob("*")
        if p.is_file() and not p.is_symlink()
        for st in (p.stat(),)
    }
    merged = [p for p in out.rglob("*") if p.is_file() and not p.is_symlink()]
    assert merged
    assert [p for p in merged if (p.stat().st_dev, p.stat().st_ino) in inodes] == []
    # A later change to a shard's evidence leaves the sealed, merged result as it was.
    trial_one = read_json(runs["plan"])["results"][0]["id"]
    relative = Path(trial_one, "groups", G0, "candidate", "run.json")
    (shard_run,) = (
        d / relative for s in shards for d in s.rglob("*-of-2.*") if (d / relative).is_file()
    )
    shard_run.chmod(0o644)
    shard_run.write_text(shard_run.read_text().replace('"complete"', '"tampered"'))
    assert skill_eval(["verify", str(out / trial_one)]) == 0
    assert (out / relative).read_bytes() != shard_run.read_bytes()
