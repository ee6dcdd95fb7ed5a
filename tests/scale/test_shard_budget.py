"""Spend across shards of live, priced subjects: each shard holds ceiling / N and the merge
reports the total; with a ledger service the ceiling binds globally; a dead service or a wrong
token fails the subjects as infrastructure, in one sentence."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.cli import main as skill_eval
from pytest_skill_eval.hosts.pi.config import pi_agent_files
from pytest_skill_eval.modelserver.script import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.support.files import read_json
from tests.support.roots import VARIANTS, body_group, make_root
from tests.support.runs import skill_eval_args

pytestmark = pytest.mark.pi

# $1 per subject: 1000 input tokens at 1000 USD per million.
PRICES = {"input": 1000.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0}
REPLY = {"response": {"text": "done", "usage": {"input": 1000, "output": 0}}}
TOKEN = "shard-ledger-token"


@pytest.fixture(scope="module")
def priced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A root of four groups on a live loopback provider priced at $1 a subject."""
    base = tmp_path_factory.mktemp("priced")
    groups = [
        body_group(f"g{i}", model={"model": "budgetco/priced"}, expectations=[]) for i in range(4)
    ]
    root = make_root(base / "source", groups, {})
    with ScriptedModelServer() as server:
        route = server.open_route(parse_script({"version": 1, "interactions": [REPLY] * 80}))
        models = pi_agent_files(route, provider="budgetco", model_id="priced", cost=PRICES)
        (root / "models.json").write_text(json.dumps(models))
        yield root


def _plan(root: Path, out: Path, *extra: str) -> Path:
    argv = ["plan", str(root / "suite.json"), "--root", str(root), "-o", str(out), *extra]
    assert skill_eval(argv) == 0
    return out


def _shard_command(machine: Path, plan: Path, shard: str, *extra: str) -> list[str]:
    args = skill_eval_args(
        machine, "--skill-eval-plan", str(plan), "--skill-eval-shard", shard,
        "-o", f"skill_eval_pi_models={machine / 'models.json'}", *extra, cassettes=False,
    )  # fmt: skip
    return [sys.executable, "-m", "pytest", "-c", "/dev/null", "--rootdir", str(machine), *args]


def _machine(root: Path, name: str) -> Path:
    machine = root.parent / name
    shutil.copytree(root, machine)
    return machine


def _env(token: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SKILL_EVAL_LEDGER_TOKEN"}
    if token is not None:
        env["SKILL_EVAL_LEDGER_TOKEN"] = token
    return env


def _runs(runs_dir: Path) -> list[dict[str, Any]]:
    return [read_json(p) for p in sorted(runs_dir.rglob("run.json")) if p.parent.name in VARIANTS]


def test_each_shard_holds_its_share_and_the_merge_reports_the_total(priced: Path) -> None:
    plan = _plan(priced, priced.parent / "split.json", "--max-cost", "10")
    shards = []
    for k in (1, 2):
        machine = _machine(priced, f"split{k}")
        done = subprocess.run(
            _shard_command(machine, plan, f"{k}/2"), cwd=machine, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
        (record,) = (read_json(p) for p in machine.rglob("shard.json"))
        # Shard K of 2 holds half the ceiling and spent its own four $1 subjects (two groups).
        assert record["budget"] == {"maxCost": 5.0, "spent": 4.0, "exhausted": False}
        assert record["ledger"] is None
        shards.append(machine / ".skill-eval" / "runs")
    out = priced.parent / "split-merged"
    assert skill_eval(["merge", str(plan), *map(str, shards), "-o", str(out)]) == 0
    summary = read_json(out / read_json(plan)["results"][0]["id"] / "summary.json")
    assert summary["budget"] == {"maxCost": 10.0, "spent": 8.0, "exhausted": False}


@pytest.fixture
def ledger_service(tmp_path: Path) -> Iterator[str]:
    """`skill-eval ledger serve` on a free loopback port: a $3 ceiling, $1 held per subject."""
    command = [
        sys.executable, "-c", "from pytest_skill_eval.cli import main; raise SystemExit(main())",
        "ledger", "serve", "--max-cost", "3", "--reserve", "1", "--port", "0",
        "--state", str(tmp_path / "ledger-state.json"),
    ]  # fmt: skip
    service = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=_env(TOKEN))
    try:
        assert service.stdout is not None
        line = service.stdout.readline()
        assert line.startswith("ledger service on http://127.0.0.1:"), line
        yield line.split()[3]
    finally:
        service.terminate()
        service.wait(timeout=30)


def test_two_shards_against_one_ledger_service_never_pass_the_global_ceiling(
    priced: Path, ledger_service: str
) -> None:
    plan = _plan(priced, priced.parent / "global.json")
    children, machines = [], []
    for k in (1, 2):
        machine = _machine(priced, f"global{k}")
        machines.append(machine)
        command = _shard_command(machine, plan, f"{k}/2", "--skill-eval-ledger-url", ledger_service)
        children.append(
            subprocess.Popen(
                command,
                cwd=machine,
                env=_env(TOKEN),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    outputs = [child.communicate(timeout=600)[0] for child in children]
    assert [child.returncode for child in children] == [1, 1], outputs
    runs = [r for m in machines for r in _runs(m / ".skill-eval" / "runs")]
    ran = [r for r in runs if r.get("process")]
    cancelled = [r for r in runs if r["state"] == "cancelled"]
    assert len(runs) == 8
    assert len(ran) + len(cancelled) == 8
    # Every subject costs its $1 reservation, so exactly three fit under the $3 ceiling.
    assert len(ran) == 3
    assert all(r["state"] == "complete" for r in ran)
    assert all("budget exhausted" in r["error"]["message"] for r in cancelled)
    shards = [m / ".skill-eval" / "runs" for m in machines]
    for machine in machines:
        (record,) = (read_json(p) for p in machine.rglob("shard.json"))
        assert record["ledger"] == ledger_service
        assert record["budget"]["maxCost"] == 3.0
    out = priced.parent / "global-merged"
    assert skill_eval(["merge", str(plan), *map(str, shards), "-o", str(out)]) == 0
    summary = read_json(out / read_json(plan)["results"][0]["id"] / "summary.json")
    assert summary["budget"] == {"maxCost": 3.0, "spent": 3.0, "exhausted": True}
    evidence = b"".join(p.read_bytes() for s in (*shards, out) for p in s.rglob("*") if p.is_file())
    assert TOKEN.encode() not in evidence


@pytest.mark.parametrize("case", ["dead", "wrong-token"])
def test_an_unusable_ledger_service_fails_the_subjects_as_infrastructure(
    priced: Path, ledger_service: str, case: str
) -> None:
    plan = _plan(priced, priced.parent / f"{case}.json", "--group", "g0")
    machine = _machine(priced, case)
    url, token = ledger_service, "not-the-token"
    if case == "dead":
        url, token = "http://127.0.0.1:9", TOKEN  # the discard port: nothing listens
    command = _shard_command(machine, plan, "1/1", "--skill-eval-ledger-url", url)
    done = subprocess.run(command, cwd=machine, env=_env(token), capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    runs = _runs(machine / ".skill-eval" / "runs")
    assert [r["state"] for r in runs] == ["infrastructure-failed"] * 2
    assert all(r.get("process") is None for r in runs)  # no subject started
    expected = (
        f"budget ledger unusable: the ledger service at {url} cannot be reached"
        if case == "dead"
        else f"budget ledger unusable: the ledger service at {url} refused this run: a wrong token"
    )
    assert all(r["error"]["message"].startswith(expected) for r in runs), runs[0]["error"]
    assert "not-the-token" not in done.stdout + done.stderr
