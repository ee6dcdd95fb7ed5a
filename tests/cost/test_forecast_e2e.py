"""The forecast of the example suite from its recordings against what a recorded run charges.

The example suite's scripts hold the usage of every answer. Given a priced model, `skill-eval
plan --estimate` forecasts a range from them; a recording run through a fake provider that
answers exactly those answers is then charged the provider's price for the usage it reported,
and that charge lies within the forecast. A paid run whose forecast exceeds the ceiling says so
before its first request.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import main
from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall
from pytest_skill_eval.modelserver.scriptparse import load_script
from pytest_skill_eval.modelserver.wire import OPENAI, render_stream
from tests.support.files import read_json
from tests.support.http import Answer, FakeUpstream, Scripted, UpstreamRequest
from tests.support.runs import results, skill_eval_args

pytestmark = pytest.mark.pi

EXAMPLE = Path(__file__).resolve().parents[2] / "example_suites" / "changelog"
MODEL = "openai/gpt-4.1"  # priced by Pi's own registry
PROMPTS = {
    "Please log in the changelog": "natural-activation",
    "Note in the changelog": "changelog-entry",
}
LOCATION = re.compile(r'(?:<location>|location=")([^<"]+)/SKILL\.md')
TOTAL = re.compile(r"^total: \$([0-9.]+) to \$([0-9.]+)$", re.MULTILINE)


def _example(tmp_path: Path) -> Path:
    """The example suite, its groups declaring a priced model (a live run needs one)."""
    root = tmp_path / "changelog"
    # Without the results an earlier run of the example left (the README's main job does).
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".skill-eval"))
    for path in (root / "groups").glob("*.json"):
        group = json.loads(path.read_text(encoding="utf-8"))
        group["model"] = {"model": MODEL}
        path.write_text(json.dumps(group), encoding="utf-8")
    return root


def _as_scripted(scripts: Path, count: int) -> list[Scripted]:
    """A provider that answers each request as the example's script for it would."""

    def answer(request: UpstreamRequest) -> Answer:
        messages = request.body["messages"]
        text = json.dumps(messages).replace('\\"', '"')
        group = next(g for prompt, g in PROMPTS.items() if prompt in text)
        found = LOCATION.search(text)  # only the candidate is shown the skill
        variant = "candidate" if found else "baseline"
        index = sum(1 for m in messages if m.get("role") == "assistant")
        response = load_script(scripts / group / f"{variant}.yaml").interactions[index].response
        if found:  # like a real model: the skill at the location it was shown
            calls = tuple(
                ToolCall(c.name, {k: _located(v, found.group(1)) for k, v in c.arguments.items()})
                for c in response.tool_calls
            )
            response = ScriptedResponse(
                text=response.text, tool_calls=calls, usage=response.usage, stop=response.stop
            )
        reply = render_stream(OPENAI, response, model="gpt-4.1", request_index=index)
        return 200, "text/event-stream", list(reply.chunks)

    return [answer] * count


def _located(value: object, skill_dir: str) -> object:
    return value.replace("{{skill:0}}", skill_dir) if isinstance(value, str) else value


def _forecast(
    root: Path, cassettes: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[float, float]:
    code = main(
        ["plan", str(root / "suite.json"), "--root", str(root), "--cassettes", str(cassettes),
         "--estimate"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "no recording" not in out, out
    assert "not priced" not in out, out
    total = TOTAL.search(out)
    assert total, out
    return float(total.group(1)), float(total.group(2))


def _recording(root: Path, cassettes: Path, upstream: FakeUpstream, *extra: str) -> list[str]:
    return [
        *skill_eval_args(root, cassettes=False),
        *("--skill-eval-cassettes", str(cassettes)),
        *("--skill-eval-record", "all"),
        *("-o", f"skill_eval_upstream_url={upstream.base_url}/v1"),
        "-p",
        "no:randomly",
        *extra,
    ]


def test_the_forecast_from_the_recordings_holds_what_a_recorded_run_charges(
    pytester: pytest.Pytester,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = _example(tmp_path)
    low, high = _forecast(root, root / "scripts", capsys)
    assert 0 < low <= high
    cassettes = tmp_path / "recorded"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    upstream = FakeUpstream(_as_scripted(root / "scripts", 12))
    try:
        result = pytester.runpytest_subprocess(
            *_recording(
                root,
                cassettes,
                upstream,
                *("--skill-eval-estimate", str(root / "scripts")),
                *("--skill-eval-max-cost", str(2 * high)),
            )
        )
    finally:
        upstream.stop()
    output = result.stdout.str()
    assert "exceeds --skill-eval-max-cost" not in output  # its forecast is within the ceiling
    assert len(upstream.requests) == 9, output  # 1 + 2 + 3 + 3 answers, as scripted
    summary = read_json(results(root)[-1] / "summary.json")
    charged = summary["budget"]["spent"]
    runs = [
        read_json(results(root)[-1] / "groups" / g / v / "run.json")
        for g in PROMPTS.values()
        for v in ("baseline", "candidate")
    ]
    assert all(r["state"] == "complete" and r["spend"]["simulated"] is False for r in runs)
    # Each run counts the model calls it made: the answers its script holds.
    assert [r["modelCalls"] for r in runs] == [1, 2, 3, 3]
    assert charged == pytest.approx(sum(r["spend"]["usd"] for r in runs))
    assert low <= charged <= high, (low, charged, high)
    # The cassettes the run recorded forecast the same range: the usage went through intact.
    assert _forecast(root, cassettes, capsys) == (low, high)


def test_a_paid_run_whose_forecast_exceeds_the_ceiling_says_so_before_its_first_request(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _example(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    upstream = FakeUpstream(_as_scripted(root / "scripts", 3))
    try:
        result = pytester.runpytest_subprocess(
            *_recording(
                root,
                tmp_path / "recorded",
                upstream,
                *("--skill-eval-group", "natural-activation"),
                *("--skill-eval-estimate", str(root / "scripts")),
                *("--skill-eval-max-cost", "0.005"),
            )
        )
    finally:
        upstream.stop()
    lines = result.outlines
    warned = [i for i, line in enumerate(lines) if "exceeds --skill-eval-max-cost 0.005" in line]
    assert warned, result.stdout.str()
    # Said before the session began, so before any subject could send a request.
    started = next(i for i, line in enumerate(lines) if "test session starts" in line)
    assert warned[0] < started
    assert (
        "natural-activation on pi, openai/gpt-4.1: $0.007448 to $0.007448" in lines[warned[0] + 1]
    )
    # And said again with the bottom line, where the run's outcome is read.
    bottom = next(i for i, line in enumerate(lines) if "bottom line" in line and "---" in line)
    assert any(i > bottom for i in warned), result.stdout.str()
