"""Spend across shards of priced subjects: each shard holds ceiling / N and the merge reports
the total; with a Redis ledger the whole ceiling binds every shard together, and a Redis that
stops or refuses the password fails the subjects as infrastructure, in one sentence naming its
URL without the password, which reaches no evidence, terminal or JUnit."""

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

from pytest_skill_eval.budget.redis_ledger import PASSWORD_ENV, RedisLedger
from pytest_skill_eval.commands.cli import main as skill_eval
from pytest_skill_eval.hosts.pi.config import pi_agent_files
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.support.files import read_json
from tests.support.http import FakeUpstream, UpstreamRequest, responses_sse
from tests.support.redis_server import PASSWORD, RedisServer
from tests.support.roots import VARIANTS, body_group, make_root, on_fast_host
from tests.support.runs import skill_eval_args

pytestmark = pytest.mark.pi

# $1 per subject: 1000 input tokens at 1000 USD per million.
PRICES = {"input": 1000.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0}
REPLY = {"response": {"text": "done", "usage": {"input": 1000, "output": 0}}}


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
    command = [sys.executable, "-m", "pytest", "-c", "/dev/null", "--rootdir", str(machine)]
    return [*command, f"--basetemp={machine.parent / f'{machine.name}-basetemp'}", *args]


def _machine(root: Path, name: str) -> Path:
    machine = root.parent / name
    shutil.copytree(root, machine)
    return machine


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


# Codex subjects recording from a loopback upstream priced at $1 an answer (40 output tokens
# at 25,000 USD per million): paid spend, charged to the ledger.
CODEX_PRICES = {"input": 0.0, "output": 25000.0, "cacheRead": 0.0, "cacheWrite": 0.0}
UPSTREAM_KEY = "BUDGETCO_KEY"


@pytest.fixture(scope="module")
def codex_priced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root of four Codex groups whose model is priced at $1 an answer."""
    base = tmp_path_factory.mktemp("codex-priced")
    groups = [
        body_group(f"g{i}", model={"model": "budgetco/priced"}, expectations=[], **on_fast_host())
        for i in range(4)
    ]
    root = make_root(base / "source", groups, {})
    model = {"id": "priced", "name": "priced", "cost": CODEX_PRICES}
    provider = {"api": "openai-responses", "apiKey": UPSTREAM_KEY, "models": [model]}
    provider["baseUrl"] = "http://127.0.0.1:9/v1"  # every shard names the upstream itself
    (root / "models.json").write_text(json.dumps({"providers": {"budgetco": provider}}))
    (root / "cassettes").mkdir()
    return root


def _answer(_: UpstreamRequest) -> tuple[int, str, list[bytes]]:
    return 200, "text/event-stream", [responses_sse(text="done")]


def _recording(
    machine: Path, plan: Path, shard: str, upstream: FakeUpstream, url: str
) -> list[str]:
    return _shard_command(
        machine, plan, shard,
        "--skill-eval-cassettes", str(machine / "cassettes"),
        "-o", f"skill_eval_upstream_url={upstream.base_url}/v1",
        "--skill-eval-ledger-url", url,
        "--junitxml", str(machine / "junit.xml"),
    )  # fmt: skip


def _codex_plan(root: Path, name: str, *extra: str) -> Path:
    return _plan(
        root, root.parent / f"{name}.json", "--cassettes", str(root / "cassettes"),
        "--record", "once", *extra,
    )  # fmt: skip


def _ledger_env(password: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != PASSWORD_ENV}
    env[UPSTREAM_KEY] = "sk-budgetco-not-a-real-key"
    if password is not None:
        env[PASSWORD_ENV] = password
    return env


def _run(
    command: list[str], machine: Path, upstream: FakeUpstream, password: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`command` run on `machine` with the ledger's environment (and `password`); then the
    upstream stops."""
    try:
        return subprocess.run(
            command, cwd=machine, env=_ledger_env(password), capture_output=True, text=True
        )
    finally:
        upstream.stop()


def _every_byte(*dirs: Path) -> bytes:
    return b"".join(p.read_bytes() for d in dirs for p in d.rglob("*") if p.is_file())


@pytest.mark.codex
def test_two_shards_racing_on_one_redis_ledger_spend_exactly_the_ceiling(
    codex_priced: Path, redis_server: RedisServer
) -> None:
    plan = _codex_plan(codex_priced, "race", "--max-cost", "3")
    upstream = FakeUpstream([_answer] * 8)
    children, machines = [], []
    try:
        for k in (1, 2):
            machine = _machine(codex_priced, f"race{k}")
            machines.append(machine)
            children.append(
                subprocess.Popen(
                    # The password on the command line: it must still reach no byte written.
                    [
                        *_recording(machine, plan, f"{k}/2", upstream, redis_server.url()),
                        *("--skill-eval-reserve", "1"),
                        # Shard 1 on two xdist workers: each worker charges the same ledger.
                        *(("-n", "2") if k == 1 else ()),
                    ],
                    cwd=machine,
                    env=_ledger_env(),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        outputs = [child.communicate(timeout=600)[0] for child in children]
    finally:
        upstream.stop()
    assert [child.returncode for child in children] == [1, 1], outputs
    runs = [r for m in machines for r in _runs(m / ".skill-eval" / "runs")]
    ran = [r for r in runs if r.get("process")]
    cancelled = [r for r in runs if r["state"] == "cancelled"]
    assert len(runs) == 8
    # Each subject holds its $1 reservation while it runs: exactly three fit under $3.
    assert len(ran) == 3, [(r["state"], r.get("error")) for r in runs]
    assert len(cancelled) == 5
    assert all(r["state"] == "complete" for r in ran)
    assert all(r["spend"] == {"usd": 1.0, "simulated": False} for r in ran)
    assert all(r["error"]["message"].startswith("budget exhausted") for r in cancelled)
    assert len(upstream.requests) == 3
    key = f"skill-eval:ledger:{{{read_json(plan)['id']}}}:state"
    state = redis_server.client().hgetall(key)
    assert (state[b"spent"], state[b"charges"], state[b"exhausted"]) == (b"3", b"3", b"1")
    shards = [m / ".skill-eval" / "runs" for m in machines]
    for machine in machines:
        (record,) = (read_json(p) for p in machine.rglob("shard.json"))
        assert record["ledger"] == redis_server.url(password=False)
        assert record["budget"]["maxCost"] == 3.0  # the whole ceiling, not split per shard
    out = codex_priced.parent / "race-merged"
    assert skill_eval(["merge", str(plan), *map(str, shards), "-o", str(out)]) == 0
    summary = read_json(out / read_json(plan)["results"][0]["id"] / "summary.json")
    assert summary["budget"] == {"maxCost": 3.0, "spent": 3.0, "exhausted": True}
    written = _every_byte(*machines, out)  # evidence, shard.json, JUnit, cassettes
    assert PASSWORD.encode() not in written
    assert PASSWORD not in "".join(outputs)


@pytest.mark.codex
def test_a_redis_stopped_mid_run_fails_the_remaining_subjects_clearly(
    codex_priced: Path, own_redis_server: RedisServer
) -> None:
    plan = _codex_plan(codex_priced, "stopped", "--max-cost", "100")
    answered: list[int] = []

    def answer_then_stop(request: UpstreamRequest) -> tuple[int, str, list[bytes]]:
        answered.append(1)
        if len(answered) == 2:
            own_redis_server.stop()  # while the second subject runs, after its admission
        return _answer(request)

    upstream = FakeUpstream([answer_then_stop] * 8)
    machine = _machine(codex_priced, "stopped")
    url = own_redis_server.url(password=False)
    done = _run(
        [*_recording(machine, plan, "1/1", upstream, url), "--skill-eval-reserve", "1"],
        machine,
        upstream,
        PASSWORD,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    runs = _runs(machine / ".skill-eval" / "runs")
    assert len(runs) == 8
    states = sorted(r["state"] for r in runs)
    assert states == ["complete"] + ["infrastructure-failed"] * 7
    failed = [r for r in runs if r["state"] == "infrastructure-failed"]
    unreachable = f"the Redis ledger at {url} cannot be reached"
    # The subject that was running when Redis stopped ran, but its spend could not be charged.
    (uncharged,) = [r for r in failed if r.get("process")]
    assert uncharged["error"]["message"].startswith("budget ledger unusable, spend not charged: ")
    assert unreachable in uncharged["error"]["message"]
    # Every later subject was refused before it started: none ran unaccounted.
    for run in failed:
        if run is not uncharged:
            assert run.get("process") is None
            assert run["error"]["message"].startswith(f"budget ledger unusable: {unreachable}")
    assert len(upstream.requests) == 2
    assert PASSWORD.encode() not in _every_byte(machine)
    assert PASSWORD not in done.stdout + done.stderr


@pytest.mark.codex
def test_a_redis_refusing_the_password_fails_the_subjects_before_they_start(
    codex_priced: Path, redis_server: RedisServer
) -> None:
    plan = _codex_plan(codex_priced, "refused", "--group", "g0", "--max-cost", "3")
    machine = _machine(codex_priced, "refused")
    upstream = FakeUpstream([])
    url = redis_server.url(password=False)
    done = _run(
        _recording(machine, plan, "1/1", upstream, url), machine, upstream, "not-the-password"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    runs = _runs(machine / ".skill-eval" / "runs")
    assert [r["state"] for r in runs] == ["infrastructure-failed"] * 2
    assert all(r.get("process") is None for r in runs)  # no subject started
    expected = f"budget ledger unusable: the Redis ledger at {url} refused this run"
    assert all(r["error"]["message"].startswith(expected) for r in runs), runs[0]["error"]
    assert upstream.requests == []
    assert b"not-the-password" not in _every_byte(machine)
    assert "not-the-password" not in done.stdout + done.stderr


@pytest.mark.codex
def test_a_shard_asking_for_another_ceiling_on_the_same_ledger_is_refused(
    codex_priced: Path, redis_server: RedisServer
) -> None:
    plan = _codex_plan(codex_priced, "mismatch", "--group", "g0")
    # Another shard opened the plan's ledger first, with a $3 ceiling and $1 held a subject.
    RedisLedger.open(redis_server.url(), read_json(plan)["id"], 3.0, 1.0)
    machine = _machine(codex_priced, "mismatch")
    upstream = FakeUpstream([])
    done = _run(
        [
            *_recording(machine, plan, "1/1", upstream, redis_server.url()),
            *("--skill-eval-max-cost", "5", "--skill-eval-reserve", "1"),
        ],
        machine,
        upstream,
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    (line,) = [text for text in done.stderr.splitlines() if text.startswith("ERROR: ")]
    assert "holds a ceiling of 3 USD and a reserve of 1 USD; this run asks for 5 USD" in line
    assert redis_server.url(password=False) in line
    assert PASSWORD not in done.stdout + done.stderr
    assert _runs(machine / ".skill-eval" / "runs") == []
    assert upstream.requests == []


@pytest.mark.codex
def test_without_a_plan_the_ledger_is_the_invocations_own(
    codex_priced: Path, redis_server: RedisServer
) -> None:
    machine = _machine(codex_priced, "unplanned")
    upstream = FakeUpstream([_answer] * 8)
    args = skill_eval_args(
        machine, "-o", f"skill_eval_pi_models={machine / 'models.json'}",
        "--skill-eval-cassettes", str(machine / "cassettes"), "--skill-eval-record", "once",
        "-o", f"skill_eval_upstream_url={upstream.base_url}/v1",
        "--skill-eval-ledger-url", redis_server.unix_url(),
        "--skill-eval-max-cost", "2", "--skill-eval-reserve", "1", cassettes=False,
    )  # fmt: skip
    command = [sys.executable, "-m", "pytest", "-c", "/dev/null", "--rootdir", str(machine)]
    command += [f"--basetemp={machine.parent / f'{machine.name}-basetemp'}"]
    done = _run([*command, *args], machine, upstream, PASSWORD)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "budget: spent 2.0 of 2.0 USD - budget exhausted" in done.stdout
    (result,) = [p for p in (machine / ".skill-eval" / "runs").iterdir() if p.is_dir()]
    assert read_json(result / "summary.json")["budget"] == {
        "maxCost": 2.0,
        "spent": 2.0,
        "exhausted": True,
    }
    # Keyed by the invocation's own result id.
    state = redis_server.client().hgetall(f"skill-eval:ledger:{{{result.name}}}:state")
    assert (state[b"spent"], state[b"charges"]) == (b"2", b"2")
    assert len([r for r in _runs(result) if r.get("process")]) == 2
