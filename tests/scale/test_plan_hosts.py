"""A plan names the hosts each unit runs on; shards follow them and the merge finds their
result directories (`<group>@<host>` on any host but Pi)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from pytest_skill_eval.scale.plan import invocation_record, load_plan
from tests.support.files import read_json
from tests.support.roots import VARIANTS, body_group, make_root, runtime, write_answer
from tests.support.runs import run_detached


def _root(base: Path) -> Path:
    scripts = {"g0/baseline": write_answer("no"), "g0/candidate": write_answer("yes")}
    return make_root(base / "root", [body_group("g0")], scripts)


def _plan(root: Path, out: Path, *hosts: str) -> int:
    argv = ["plan", str(root / "suite.json"), "--root", str(root), "-o", str(out)]
    argv += ["--cassettes", str(root / "scripts")]
    for host in hosts:
        argv += ["--host", host]
    return skill_eval(argv)


def test_a_plan_pins_the_declared_host_or_the_one_chosen(tmp_path: Path) -> None:
    root = _root(tmp_path)
    assert _plan(root, tmp_path / "declared.json") == 0
    assert _plan(root, tmp_path / "chosen.json", "codex", "claude-code", "codex") == 0
    declared, chosen = read_json(tmp_path / "declared.json"), read_json(tmp_path / "chosen.json")
    assert [u["hosts"] for u in declared["units"]] == [["pi"]]
    assert declared["selection"]["hosts"] is None
    assert [u["hosts"] for u in chosen["units"]] == [["codex", "claude-code"]]
    assert chosen["selection"]["hosts"] == ["codex", "claude-code"]


def test_an_unknown_host_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _plan(_root(tmp_path), tmp_path / "plan.json", "vim") != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "vim" in err
    assert "Traceback" not in err
    assert not (tmp_path / "plan.json").exists()


def test_a_shard_asked_for_another_host_than_its_plan_is_refused(tmp_path: Path) -> None:
    root = _root(tmp_path)
    plan = tmp_path / "plan.json"
    assert _plan(root, plan, "codex") == 0
    done = run_detached(
        root, "--skill-eval-plan", str(plan), "--skill-eval-shard", "1/1",
        "--skill-eval-host", "pi", "--collect-only",
    )  # fmt: skip
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "--skill-eval-host pi contradicts the plan" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.pi
@pytest.mark.codex
def test_a_plan_made_for_codex_runs_there_and_merges(tmp_path: Path) -> None:
    root = _root(tmp_path)  # declared on Pi; the plan moves it onto Codex
    plan = tmp_path / "plan.json"
    assert _plan(root, plan, "codex") == 0
    done = run_detached(root, "--skill-eval-plan", str(plan), "--skill-eval-shard", "1/1")
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "merged"
    shards = root / ".skill-eval" / "runs"
    assert skill_eval(["merge", str(plan), str(shards), "-o", str(out)]) == 0
    (result,) = (out / r["id"] for r in read_json(plan)["results"])
    assert [p.name for p in (result / "groups").iterdir()] == ["g0@codex"]
    grade = read_json(result / "groups" / "g0@codex" / "deterministic-grade.json")
    assert [(c["id"], c["transition"]) for c in grade["comparisons"]] == [
        ("says-yes", "fail-to-pass")
    ]
    (shard,) = shards.rglob("shard.json")
    assert [(u["group"], u["host"]) for u in read_json(shard)["units"]] == [("g0", "codex")]
    assert skill_eval(["verify", str(result)]) == 0


@pytest.mark.pi
@pytest.mark.codex
def test_a_missing_unit_says_its_host_was_chosen_as_a_delivered_one_does(tmp_path: Path) -> None:
    scripts = {f"{g}/{v}": write_answer("yes") for g in ("g0", "g1") for v in VARIANTS}
    on = {"runtime": runtime(host="codex")}
    root = make_root(tmp_path / "root", [body_group("g0", **on), body_group("g1", **on)], scripts)
    plan = tmp_path / "plan.json"
    assert _plan(root, plan, "codex") == 0  # chosen by the plan, the same host as declared
    done = run_detached(root, "--skill-eval-plan", str(plan), "--skill-eval-shard", "1/2")
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "merged"
    assert skill_eval(["merge", str(plan), str(root / ".skill-eval" / "runs"), "-o", str(out)]) == 1
    (result,) = (out / r["id"] for r in read_json(plan)["results"])
    records = {
        d.name: read_json(d / "baseline" / "run.json") for d in (result / "groups").iterdir()
    }
    assert sorted(records) == ["g0@codex", "g1@codex"]
    states = sorted(r["state"] for r in records.values())
    assert states == ["complete", "infrastructure-failed"]  # one delivered, one shard-missing
    chosen = {"name": "codex", "chosenBy": "invocation", "declared": "codex"}
    assert [r["host"] for r in records.values()] == [chosen, chosen]


def test_a_chosen_host_that_cannot_run_a_group_gets_no_unit_of_it(tmp_path: Path) -> None:
    thinking = {"model": "openai/gpt-test", "thinking": "minimal"}  # none on Claude Code
    scripts = {f"{g}/{v}": write_answer("yes") for g in ("g0", "g1") for v in VARIANTS}
    groups = [body_group("g0", model=thinking), body_group("g1")]
    root = make_root(tmp_path / "root", groups, scripts)
    assert _plan(root, tmp_path / "plan.json", "pi", "claude-code") == 0
    plan = read_json(tmp_path / "plan.json")
    assert [(u["group"], u["hosts"]) for u in plan["units"]] == [
        ("g0", ["pi"]),
        ("g1", ["pi", "claude-code"]),
    ]
    # The merged result says why, as a single machine would: the plan carries the reason into
    # each trial's invocation.json, which the views and the cross-host table read.
    (fact,) = plan["cannotRun"]
    assert (fact["group"], fact["host"]) == ("g0", "claude-code")
    assert "thinking" in fact["reason"]
    invocation = invocation_record(load_plan(tmp_path / "plan.json"), 1)
    assert invocation["hosts"] == ["pi", "claude-code"]
    assert invocation["cannotRun"] == [fact]
