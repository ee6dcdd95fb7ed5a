"""`--skill-eval-retries N`: an infrastructure-failed variant runs again, every attempt kept;
a run that failed a check is never run again (subjects on the fastest host, scripted)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skill_eval.evidence.seal import verify_result
from tests.support.files import read_json
from tests.support.http import FakeUpstream, responses_sse
from tests.support.roots import answers_root, body_group, fast_dir, make_root, on_fast_host
from tests.support.runs import results, run_detached

pytestmark = [pytest.mark.pi, pytest.mark.codex]

OUTAGE = [{"response": {"error": {"status": 503, "message": "scripted outage"}}}]


def test_an_infrastructure_failure_is_retried_keeping_every_attempt_and_a_check_failure_never(
    tmp_path: Path,
) -> None:
    root = answers_root(
        tmp_path / "root",
        {
            "outage/baseline": OUTAGE,
            "outage/candidate": "yes",
            "wrong/baseline": "yes",
            "wrong/candidate": "no",
        },
    )
    junit = tmp_path / "junit.xml"
    done = run_detached(
        root, "--skill-eval-retries", "2", f"--junitxml={junit}", "-p", "no:randomly"
    )
    assert "Traceback" not in done.stdout + done.stderr
    (result,) = results(root)
    assert verify_result(result) == []  # every attempt is under the group's manifest and seal

    baseline = result / "groups" / fast_dir("outage") / "baseline"
    final = read_json(baseline / "run.json")
    assert final["state"] == "infrastructure-failed"
    assert [a["attempt"] for a in final["attempts"]] == [1, 2]
    assert [a["evidence"] for a in final["attempts"]] == ["attempts/1", "attempts/2"]
    for n in (1, 2):
        earlier = baseline / "attempts" / str(n)
        kept = read_json(earlier / "run.json")
        assert kept["state"] == "infrastructure-failed"
        assert "scripted outage" in json.dumps(kept["error"])
        assert (earlier / "transcript.json").is_file()
        assert (earlier / "events.jsonl").is_file()
        assert "attempts" not in kept or len(kept["attempts"]) == n - 1
    assert not (baseline / "attempts" / "3").exists()
    # Its counterpart completed at once: one attempt, nothing set aside.
    candidate = result / "groups" / fast_dir("outage") / "candidate"
    assert "attempts" not in read_json(candidate / "run.json")
    assert not (candidate / "attempts").exists()

    wrong = result / "groups" / fast_dir("wrong")
    for variant in ("baseline", "candidate"):
        record = read_json(wrong / variant / "run.json")
        assert record["state"] == "complete"
        assert "attempts" not in record
        assert not (wrong / variant / "attempts").exists()
    grade = read_json(wrong / "deterministic-grade.json")
    assert {c["variant"]: c["state"] for c in grade["checks"]} == {
        "baseline": "pass",
        "candidate": "fail",
    }

    # The terminal and JUnit say how many attempts the variant took.
    kept = re.escape(str(baseline / "attempts"))
    assert re.search(
        rf"^    baseline: 3 attempts \(the earlier ones kept in {kept}\)$", done.stdout, re.M
    ), done.stdout
    assert re.search(r'name="attempts" value="3"', junit.read_text(encoding="utf-8"))
    verified = subprocess.run(
        [str(Path(sys.executable).parent / "skill-eval"), "verify", str(result)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_aggregate_counts_the_retries_of_every_trial(tmp_path: Path) -> None:
    root = answers_root(tmp_path / "root", {"outage/baseline": OUTAGE, "outage/candidate": "yes"})
    run_detached(root, "--skill-eval-retries", "1", "--skill-eval-trials", "2")
    (aggregate,) = (root / ".skill-eval" / "runs").glob("*/aggregate.json")
    (group,) = read_json(aggregate)["groups"]
    assert group["trials"] == 2
    assert group["retries"] == 2  # one retry of the baseline in each trial
    # The earlier attempts' calls were made: the usage counts them beside the final runs.
    attempts = group["usage"]["attempts"]
    assert attempts["candidate"] == {"runs": 0, "modelCalls": 0, "costUsd": 0}
    assert attempts["baseline"]["runs"] == 2
    assert attempts["baseline"]["modelCalls"] >= 2
    verified = subprocess.run(
        [str(Path(sys.executable).parent / "skill-eval"), "verify", str(aggregate.parent)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_without_retries_an_infrastructure_failure_is_recorded_once(tmp_path: Path) -> None:
    root = answers_root(tmp_path / "root", {"outage/baseline": OUTAGE, "outage/candidate": "yes"})
    run_detached(root)
    (result,) = results(root)
    baseline = result / "groups" / fast_dir("outage") / "baseline"
    assert read_json(baseline / "run.json")["state"] == "infrastructure-failed"
    assert not (baseline / "attempts").exists()


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_retries_value_that_is_not_a_count_is_one_usage_line(tmp_path: Path, value: str) -> None:
    root = answers_root(tmp_path / "root", {"outage/baseline": OUTAGE, "outage/candidate": "yes"})
    done = run_detached(root, f"--skill-eval-retries={value}")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if "--skill-eval-retries" in line]
    assert lines == [
        f"ERROR: --skill-eval-retries expects how many times to run an infrastructure-failed "
        f"variant again (0 or more), not {value!r}"
    ]


def test_a_provider_outage_is_retried_until_an_attempt_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recording from a provider on loopback whose first answer is a 503: the first attempt
    # meets a real outage through the project's relay, the second the provider's answer.
    outage = (503, "application/json", [b'{"error": {"message": "overloaded"}}'])
    upstream = FakeUpstream([outage, (200, "text/event-stream", [responses_sse(text="done")])])
    group = body_group("outage", model={"model": "openai/gpt-5.5"}, **on_fast_host())
    root = make_root(tmp_path / "root", [group], {})  # the last --skill-eval-cassettes wins
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-retry-canary-7f31")
    try:
        done = run_detached(
            root,
            *("--skill-eval-cassettes", str(cassettes), "--skill-eval-record", "all"),
            *("-o", f"skill_eval_upstream_url={upstream.base_url}/v1"),
            *("--skill-eval-variant", "baseline", "--skill-eval-retries", "3"),
        )
    finally:
        upstream.stop()
    assert "Traceback" not in done.stdout + done.stderr
    assert len(upstream.requests) == 2  # one per attempt: no retry beyond the one that completed
    (result,) = results(root)
    baseline = result / "groups" / fast_dir("outage") / "baseline"
    final = read_json(baseline / "run.json")
    assert final["state"] == "complete", final["error"]
    assert [(a["attempt"], a["state"]) for a in final["attempts"]] == [(1, "infrastructure-failed")]
    first = read_json(baseline / "attempts" / "1" / "run.json")
    assert first["state"] == "infrastructure-failed"
    assert "503" in json.dumps(first["error"]) or "overloaded" in json.dumps(first["error"])
    assert not (baseline / "attempts" / "2").exists()
    assert verify_result(result) == []
