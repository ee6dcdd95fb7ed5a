"""A suite run as 3 shards in 3 directories, each with its own copy of the definitions, merges
into the facts, transitions and JUnit rows of a `-n 0` run, with a clean verify; a shard that
never arrives is `shard-missing`; a shard whose definitions changed is refused."""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from tests.support.files import read_json
from tests.support.roots import FAST_HOST, fast_dir, improving_root
from tests.support.runs import junit_states, run_detached, run_facts
from tests.support.shared import SharedRun, once, shared_setup

pytestmark = [pytest.mark.pi, pytest.mark.codex]

GROUPS = ("g0", "g1", "g2")
G1, G2 = (fast_dir(g) for g in GROUPS[1:])  # result directories of the groups


def _shards(serial_run: SharedRun, base: Path) -> None:
    """A plan of the three groups and its three shards, each on a machine of its own."""
    source = improving_root(base / "source", len(GROUPS), FAST_HOST)  # `serial_run`'s groups
    shutil.copyfile(serial_run.junit, base / "serial.xml")
    plan = base / "plan.json"
    argv = ["plan", str(source / "suite.json"), "--root", str(source), "-o", str(plan)]
    assert skill_eval([*argv, "--cassettes", str(source / "scripts")]) == 0
    for k in (1, 2, 3):
        machine = base / f"machine{k}"
        shutil.copytree(source, machine)
        extra = ["-n", "2"] if k == 2 else []
        done = run_detached(
            machine,
            "--skill-eval-plan", str(plan), "--skill-eval-shard", f"{k}/3",
            f"--junitxml={base / f'shard{k}.xml'}", *extra,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
@shared_setup
def runs(tmp_path_factory: pytest.TempPathFactory, serial_run: SharedRun) -> dict[str, Any]:
    """The shared `-n 0` run and three shards (the second with -n 2) of the same three groups."""
    base = once(tmp_path_factory, "shards", partial(_shards, serial_run))
    shards = [base / f"machine{k}" / ".skill-eval" / "runs" for k in (1, 2, 3)]
    (serial_result,) = (serial_run.root / ".skill-eval" / "runs").iterdir()
    return {"base": base, "plan": base / "plan.json", "shards": shards, "serial": serial_result}


def test_three_shards_merge_into_what_one_machine_writes(
    runs: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    base, plan = runs["base"], runs["plan"]
    out = base / "merged"
    # Shard directories sit below each machine's runs directory; merge finds them there.
    assert skill_eval(["merge", str(plan), *map(str, runs["shards"]), "-o", str(out)]) == 0
    (merged,) = (p for p in out.iterdir() if not p.name.startswith("."))
    assert merged.name == read_json(plan)["results"][0]["id"]
    assert run_facts(merged) == run_facts(runs["serial"])
    assert run_facts(merged)[G1]["comparisons"] == [("says-yes", "fail-to-pass")]
    junit = [base / f"shard{k}.xml" for k in (1, 2, 3)]
    assert junit_states(*junit) == junit_states(base / "serial.xml")
    assert skill_eval(["verify", str(merged)]) == 0
    invocation = read_json(merged / "invocation.json")
    assert [g["id"] for g in invocation["definitions"][0]["groups"]] == list(GROUPS)
    # Idempotent: merging again leaves the result as it is.
    before = sorted((p, p.read_bytes()) for p in merged.rglob("*") if p.is_file())
    capsys.readouterr()
    assert skill_eval(["merge", str(plan), *map(str, runs["shards"]), "-o", str(out)]) == 0
    assert "already merged" in capsys.readouterr().out
    assert sorted((p, p.read_bytes()) for p in merged.rglob("*") if p.is_file()) == before


def test_a_shard_that_never_arrived_is_shard_missing_not_cancelled(runs: dict[str, Any]) -> None:
    out = runs["base"] / "partial"
    arrived = [str(runs["shards"][0]), str(runs["shards"][1])]
    assert skill_eval(["merge", str(runs["plan"]), *arrived, "-o", str(out)]) == 1
    (merged,) = (p for p in out.iterdir() if not p.name.startswith("."))
    summary = read_json(merged / "summary.json")
    states = {g["id"]: g["state"] for g in summary["groups"]}
    assert states == {"g0": "complete", "g1": "complete", "g2": "partially-complete"}
    assert summary["state"] == "partially-complete"
    for variant in ("baseline", "candidate"):
        record = read_json(merged / "groups" / G2 / variant / "run.json")
        assert record["state"] == "infrastructure-failed"
        assert record["error"]["message"].startswith("shard-missing: shard 3/3 never delivered")
    assert skill_eval(["verify", str(merged)]) == 0


def test_a_shard_whose_definition_changed_is_refused(runs: dict[str, Any]) -> None:
    machine = runs["base"] / "changed"
    shutil.copytree(runs["base"] / "source", machine)
    group = machine / "groups" / "g1.json"
    group.write_text(group.read_text().replace("Write the answer file.", "Write it."))
    done = run_detached(
        machine, "--skill-eval-plan", str(runs["plan"]), "--skill-eval-shard", "1/3"
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "group 'g1': its definition" in done.stderr
    assert "differs from the one the plan" in done.stderr
    assert not (machine / ".skill-eval").exists()
