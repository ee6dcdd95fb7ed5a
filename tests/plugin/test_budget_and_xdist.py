"""The spend ceiling under -n 4, and identical facts under -n 0 and -n 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.pi.config import pi_agent_files
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.support.files import read_json
from tests.support.roots import body_group, fast_dir, make_root, on_fast_host, write_answer
from tests.support.runs import (
    junit_states,
    ran_and_cancelled,
    results,
    run,
    run_facts,
    skill_eval_args,
)
from tests.support.shared import SharedRun

pytestmark = pytest.mark.pi

# $1 per subject: 1000 input tokens at 1000 USD per million.
PRICES = {"input": 1000.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0}


def test_budget_stops_starting_subjects_once_the_ledger_passes_the_ceiling(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    groups = [
        body_group(f"g{i}", model={"model": "budgetco/priced"}, expectations=[]) for i in range(6)
    ]
    root = make_root(tmp_path / "root", groups, {})
    reply = {
        "response": {"text": "done", "usage": {"input": 1000, "output": 0}, "latency_ms": 1500}
    }
    with ScriptedModelServer() as server:
        # A live provider on loopback: the plugin is told nothing about it but models.json.
        route = server.open_route(parse_script({"version": 1, "interactions": [reply] * 40}))
        models = pi_agent_files(route, provider="budgetco", model_id="priced", cost=PRICES)
        (root / "models.json").write_text(json.dumps(models))
        result = pytester.runpytest_subprocess(
            *skill_eval_args(
                root, "-n", "4", "--skill-eval-max-cost", "2.5",
                "-o", f"skill_eval_pi_models={root / 'models.json'}", cassettes=False,
            )
        )  # fmt: skip
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*budget: spent * of 2.5 USD - budget exhausted*"])
    result_dir = results(root)[-1]
    summary = read_json(result_dir / "summary.json")
    assert summary["budget"]["exhausted"] is True
    assert summary["state"] == "cancelled"
    ran, cancelled = ran_and_cancelled(result_dir, [f"g{i}" for i in range(6)])
    assert all(r["state"] == "complete" for r in ran)
    assert all(r["provider"]["mode"] == "live" for r in ran)
    assert all("budget exhausted" in r["error"]["message"] for r in cancelled)
    assert len(ran) + len(cancelled) == 12
    # The ceiling is reached at the third $1 subject; at most the three others already running
    # when it was reached may finish after it. No subject starts once the ledger is exhausted.
    assert 3 <= len(ran) <= 6
    assert summary["budget"]["spent"] == pytest.approx(len(ran) * 1.0)
    assert len(cancelled) >= 6


@pytest.mark.codex
def test_serial_and_parallel_runs_give_the_same_facts(
    parallel_run: SharedRun, serial_run: SharedRun
) -> None:
    # The -n 2 run first: the shard tests, starting beside this one, build the serial run.
    facts = []
    for done in (serial_run, parallel_run):
        (result,) = results(done.root)
        facts.append(run_facts(result, changes=True))
    rows = [junit_states(serial_run.junit), junit_states(parallel_run.junit)]
    assert facts[0] == facts[1]
    # JUnit is complete under -n too: 6 items, 6 checks, 3 comparisons, same states.
    assert rows[0] == rows[1]
    assert len(rows[1]) == 6 + 6 + 3
    assert facts[0][fast_dir("g2")]["comparisons"] == [("says-yes", "fail-to-pass")]


@pytest.mark.codex
@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_session_stopped_early_records_the_groups_it_never_ran(
    pytester: pytest.Pytester, tmp_path: Path, workers: str
) -> None:
    slow = [{"response": {"text": "done", "latency_ms": 1500}}]
    on = on_fast_host()  # -x is pytest's: any host will do
    groups = [body_group(f"g{i}", expectations=[], **on) for i in range(4)]
    scripts = {f"g{i}/{v}": slow for i in range(1, 4) for v in ("baseline", "candidate")}
    scripts["g0/baseline"] = slow
    # g0's candidate script ends before its subject does: the run fails, and -x stops (a
    # missing script would be refused at collection, before anything ran).
    scripts["g0/candidate"] = write_answer("x")[:1]
    root = make_root(tmp_path / "root", groups, scripts)
    result = run(pytester, root, "-x", "-n", workers)
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED)
    (result_dir,) = results(root)
    summary = read_json(result_dir / "summary.json")
    states = {g["id"]: g["state"] for g in summary["groups"]}
    assert sorted(states) == ["g0", "g1", "g2", "g3"], summary
    assert states["g0"] == "partially-complete"
    never_ran = [g for g in ("g1", "g2", "g3") if states[g] == "cancelled"]
    assert never_ran, states
    for group_id in never_ran:
        for variant in ("baseline", "candidate"):
            record = read_json(result_dir / "groups" / fast_dir(group_id) / variant / "run.json")
            if record.get("process") is None:
                assert record["state"] == "cancelled"
                assert record["error"]["kind"] == "cancellation"
    assert summary["state"] == "cancelled"
