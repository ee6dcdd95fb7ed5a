"""Safeguards: one clear error for a missing or old Pi, and the no-progress watchdog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.pi.config import pi_agent_files
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.support.files import read_json, stand_in_pi
from tests.support.roots import answers_root, body_group, make_root
from tests.support.runs import results, run, skill_eval_args


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return answers_root(
        tmp_path / "root", {"answer/baseline": "no", "answer/candidate": "yes"}, host="pi"
    )


def test_a_missing_pi_is_one_clear_error_before_any_group_runs(
    pytester: pytest.Pytester, root: Path
) -> None:
    result = run(pytester, root, "--skill-eval-pi", str(root / "no-such-pi"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no-such-pi: no such executable" in result.stderr.str()
    assert "npm install @mariozechner/pi-coding-agent@0.73.1" in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert not (root / ".skill-eval").exists()


def test_a_too_old_pi_is_refused(pytester: pytest.Pytester, root: Path, tmp_path: Path) -> None:
    old = stand_in_pi(tmp_path / "old-pi", version="0.50.2")
    result = run(pytester, root, "--skill-eval-pi", str(old))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "is Pi 0.50.2; pytest-skill-eval needs 0.73.1 or newer" in result.stderr.str()


@pytest.mark.pi
def test_the_watchdog_stops_a_subject_that_makes_no_progress(
    pytester: pytest.Pytester, root: Path
) -> None:
    # The watchdog must outlast a Pi start-up on a loaded machine (the baseline has to finish),
    # and the scripted model must stay quiet well past it.
    slow = {"response": {"text": "too late", "latency_ms": 60_000}}
    (root / "scripts" / "answer" / "candidate.yaml").write_text(
        f"version: 1\ninteractions:\n  - {slow}\n".replace("'", '"')
    )
    result = run(pytester, root, "--skill-eval-no-progress-timeout", "10")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*candidate run is infrastructure-failed*no-progress watchdog*"])
    record = read_json(results(root)[-1] / "groups" / "answer" / "candidate" / "run.json")
    assert record["state"] == "infrastructure-failed"
    assert record["process"]["terminationReason"] == "no-progress-watchdog"
    # The interrupted turn is kept: its prompt was accepted before the model went quiet.
    assert record["turns"][0]["promptAccepted"] is True
    assert record["turns"][0]["settled"] is False
    baseline = read_json(results(root)[-1] / "groups" / "answer" / "baseline" / "run.json")
    assert baseline["state"] == "complete"


@pytest.mark.pi
def test_a_live_subject_without_credentials_says_how_to_declare_them(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = make_root(
        tmp_path / "root", [body_group("answer", model={"model": "keyco/m1"}, expectations=[])], {}
    )
    refusal = {"response": {"error": {"status": 401, "message": "invalid x-api-key"}}}
    with ScriptedModelServer() as server:
        # A provider on loopback that refuses the request, as a real one does without a key.
        route = server.open_route(parse_script({"version": 1, "interactions": [refusal] * 4}))
        models = pi_agent_files(route, provider="keyco", model_id="m1")
        (root / "models.json").write_text(json.dumps(models))
        result = pytester.runpytest_subprocess(
            *skill_eval_args(
                root, "-o", f"skill_eval_pi_models={root / 'models.json'}", cassettes=False
            )
        )
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*baseline run is infrastructure-failed*401*",
            "*hint: *no credentials reached it*runtime.environment.inherit*skill_eval_pi_auth*",
        ]
    )
    record = read_json(results(root)[-1] / "groups" / "answer" / "baseline" / "run.json")
    assert record["provider"]["mode"] == "live"
    assert "runtime.environment.inherit" in record["hint"]


def test_a_node_option_that_names_no_node_is_one_clear_error(
    pytester: pytest.Pytester, root: Path
) -> None:
    result = run(pytester, root, "--skill-eval-node", str(root / "no-such-node"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--skill-eval-node {root / 'no-such-node'}: no such executable" in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert not (root / ".skill-eval").exists()


@pytest.mark.parametrize("option", ["--skill-eval-pi-bundle", "--skill-eval-gemini-eager"])
def test_a_host_form_value_other_than_on_or_off_is_one_clear_error(
    pytester: pytest.Pytester, root: Path, option: str
) -> None:
    result = run(pytester, root, option, "maybe")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert option in result.stderr.str()
    assert "one of: on, off" in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
