"""A spend ceiling that binds while recording: registry prices, -n 4, unpriced models refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skill_eval.modelserver.script import ScriptedResponse, Usage
from pytest_skill_eval.modelserver.wire import OPENAI, render_stream
from tests.support.files import read_json
from tests.support.http import FakeUpstream, UpstreamRequest
from tests.support.roots import body_group, make_root
from tests.support.runs import ran_and_cancelled, results, skill_eval_args

pytestmark = pytest.mark.pi

# gpt-4.1 in Pi's own registry: 2 USD per million input tokens, so one answer costs $0.20.
MODEL = "openai/gpt-4.1"
TOKENS_IN = 100_000
PER_SUBJECT = 0.2
CEILING = 0.5
WORKERS = 4
SUBJECTS = 12


def _answer(request: UpstreamRequest) -> tuple[int, str, list[bytes]]:
    response = ScriptedResponse(text="done", usage=Usage(input=TOKENS_IN, output=0))
    return (
        200,
        "text/event-stream",
        list(render_stream(OPENAI, response, model="gpt-4.1", request_index=0).chunks),
    )


def _recording_args(root: Path, cassettes: Path, upstream: FakeUpstream) -> list[str]:
    return [
        *skill_eval_args(root, cassettes=False),
        *("--skill-eval-cassettes", str(cassettes)),
        *("--skill-eval-record", "once"),
        *("--skill-eval-max-cost", str(CEILING)),
        *("-o", f"skill_eval_upstream_url={upstream.base_url}/v1"),
    ]


def test_recording_is_charged_the_registry_price_and_the_ceiling_binds(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups = [body_group(f"g{i}", model={"model": MODEL}, expectations=[]) for i in range(6)]
    root = make_root(tmp_path / "root", groups, {})
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    upstream = FakeUpstream([_answer] * SUBJECTS)
    try:
        result = pytester.runpytest_subprocess(
            *_recording_args(root, cassettes, upstream), "-n", str(WORKERS)
        )
    finally:
        upstream.stop()
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines([f"*budget: spent * of {CEILING} USD - budget exhausted*"])
    result_dir = results(root)[-1]
    summary = read_json(result_dir / "summary.json")
    ran, cancelled = ran_and_cancelled(result_dir, [f"g{i}" for i in range(6)])
    assert all(r["state"] == "complete" and r["provider"]["mode"] == "record" for r in ran)
    assert all("budget exhausted" in r["error"]["message"] for r in cancelled)
    assert len(ran) + len(cancelled) == SUBJECTS
    assert len(upstream.requests) == len(ran)
    for run in ran:
        # Priced at the registry's price from the usage the upstream reported, and paid.
        assert run["spend"] == {"usd": pytest.approx(PER_SUBJECT), "simulated": False}
        assert run["usage"]["cost"]["total"] == pytest.approx(PER_SUBJECT)
    spent = summary["budget"]["spent"]
    assert summary["budget"]["exhausted"] is True
    assert spent == pytest.approx(len(ran) * PER_SUBJECT)
    # The third subject reaches the ceiling; at most the others already running finish after.
    assert CEILING <= spent <= CEILING + WORKERS * PER_SUBJECT + 1e-9
    assert len(ran) <= 3 + (WORKERS - 1)


def test_an_unpriced_model_under_a_ceiling_is_refused_before_any_request(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups = [body_group(f"g{i}", model={"model": "fakeco/m1"}, expectations=[]) for i in range(4)]
    root = make_root(tmp_path / "root", groups, {})
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    upstream = FakeUpstream([_answer] * 8)
    models = {
        "providers": {
            "fakeco": {
                "baseUrl": f"{upstream.base_url}/v1",
                "api": OPENAI,
                "apiKey": "FAKECO_KEY",
                "models": [{"id": "m1"}],  # no cost: Pi would price it at zero
            }
        }
    }
    (tmp_path / "models.json").write_text(json.dumps(models))
    monkeypatch.setenv("FAKECO_KEY", "sk-fakeco-test")
    try:
        result = pytester.runpytest_subprocess(
            *_recording_args(root, cassettes, upstream),
            *("-o", f"skill_eval_pi_models={tmp_path / 'models.json'}"),
            *("-n", str(WORKERS)),
        )
    finally:
        upstream.stop()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(
        [
            "*--skill-eval-max-cost 0.5 cannot be enforced*",
            "*fakeco/m1 (group 'g0', 'g1', 'g2', 'g3')*",
            '*skill_eval_pi_models*"cost"*',
        ]
    )
    assert len(upstream.requests) == 0
    assert not list(cassettes.rglob("*.yaml"))
