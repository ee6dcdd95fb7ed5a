"""xdist modes: those that would split a group or lose its evidence are refused up front;
`--dist loadscope` uses the plugin's scheduler; evidence a worker left elsewhere is never
recorded as `cancelled`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.files import read_json, write
from tests.support.roots import body_group, fast_dir, make_root, on_fast_host, write_answer
from tests.support.runs import results, run, run_facts
from tests.support.shared import SharedRun

REFUSED = [
    (("-n", "2", "--dist", "load"), "--dist load"),
    (("-n", "2", "--dist", "worksteal"), "--dist worksteal"),
    (("-n", "2", "--dist", "each"), "--dist each"),
    (("-n", "2", "--dist", "loadfile"), "--dist loadfile"),
    (("-n", "2", "-d"), "--dist load"),
    (("--tx", "socket=127.0.0.1:1", "--dist", "loadscope"), "--tx socket=127.0.0.1:1"),
    (("--tx", "2*popen//chdir=elsewhere", "--dist", "loadscope"), "--tx 2*popen//chdir="),
    (("--tx", "ssh=somehost", "--dist", "loadscope"), "--tx ssh=somehost"),
]


def _root(tmp_path: Path, count: int = 2) -> Path:
    """Groups g0 … on the fastest host: what is under test is how results are distributed."""
    groups = [body_group(f"g{i}", **on_fast_host()) for i in range(count)]
    scripts = {f"g{i}/baseline": write_answer("no") for i in range(count)}
    scripts |= {f"g{i}/candidate": write_answer("yes") for i in range(count)}
    return make_root(tmp_path / "root", groups, scripts)


@pytest.mark.parametrize(("args", "named"), REFUSED, ids=[a[1] for a in REFUSED])
def test_a_mode_that_could_corrupt_a_result_is_refused_before_anything_is_written(
    pytester: pytest.Pytester, tmp_path: Path, args: tuple[str, ...], named: str
) -> None:
    root = _root(tmp_path)
    result = run(pytester, root, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert named in errors, errors
    # The message names what works instead.
    assert "skill-eval plan" in errors, errors
    assert "--skill-eval-shard K/N" in errors, errors
    assert not (root / ".skill-eval").exists()


def test_dist_loadgroup_without_workers_is_not_distributed_and_not_refused(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # `-n 0` turns distribution off: a refused --dist in addopts must not block a serial run.
    root = _root(tmp_path, 1)
    result = run(pytester, root, "-n", "0", "--dist", "load", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()


@pytest.mark.pi
@pytest.mark.codex
def test_dist_loadscope_gives_the_same_facts_as_n_alone(
    parallel_run: SharedRun, loadscope_run: SharedRun
) -> None:
    facts = []
    for done in (parallel_run, loadscope_run):
        (result,) = results(done.root)
        facts.append(run_facts(result))
        # Both variants of a group ran on one worker, in order.
        lines = [ln for ln in done.stdout.splitlines() if "PASSED" in ln and "[gw" in ln]
        for group in ("g0", "g1", "g2"):
            workers = {ln.split("[gw")[1][0] for ln in lines if f"::{group}[" in ln}
            assert len(workers) == 1, lines
    assert facts[0] == facts[1]
    g2 = dict(facts[0][fast_dir("g2")])
    g2["checks"] = [check[:2] for check in g2["checks"]]  # their observations: compared above
    assert g2 == {
        "state": "complete",
        "variants": {"baseline": "complete", "candidate": "complete"},
        "checks": [("baseline-says-yes", "fail"), ("candidate-says-yes", "pass")],
        "comparisons": [("says-yes", "fail-to-pass")],
    }


ELSEWHERE = """
import os
from pathlib import Path

def pytest_sessionstart(session):
    # A worker whose evidence lands on a disk the controller cannot see.
    if hasattr(session.config, "workerinput"):
        from pytest_skill_eval.session import SESSION_KEY
        state = session.config.stash[SESSION_KEY]
        away = Path(os.environ["SKILL_EVAL_ELSEWHERE"])
        services = state.services
        services.result_dirs = {t: away / p.name for t, p in services.result_dirs.items()}
"""


G0 = fast_dir("g0")  # g0's result directory
CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.mark.pi
@pytest.mark.codex
def test_evidence_a_worker_left_elsewhere_is_infrastructure_failed_not_cancelled(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _root(tmp_path, 1)
    write(tmp_path / "plugins" / "elsewhere_plugin.py", ELSEWHERE)
    # The workers import the plugin from this checkout too, not from wherever it is installed.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "plugins"), str(CHECKOUT)]))
    monkeypatch.setenv("SKILL_EVAL_ELSEWHERE", str(tmp_path / "away"))
    result = run(pytester, root, "-n", "1", "-p", "elsewhere_plugin")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    (result_dir,) = results(root)
    summary = read_json(result_dir / "summary.json")
    assert [g["state"] for g in summary["groups"]] == ["partially-complete"]
    assert summary["state"] == "partially-complete"
    for variant in ("baseline", "candidate"):
        record = read_json(result_dir / "groups" / G0 / variant / "run.json")
        assert record["state"] == "infrastructure-failed"
        message = record["error"]["message"]
        assert message.startswith("evidence missing:"), message
        assert str(result_dir / "groups" / G0 / variant / "run.json") in message
    # The worker really wrote it, elsewhere.
    assert (tmp_path / "away" / result_dir.name / "groups" / G0 / "group.json").is_file()
