"""A script that cannot answer fails its run at once on every host: the route answers with a
status no host retries, so a script one answer short costs seconds, not minutes of retries
(real hosts against the scripted loopback server)."""

from __future__ import annotations

import pytest

from tests.support.files import read_json
from tests.support.roots import Group, build, runtime, variant
from tests.support.runs import model_requests, result_dir, skill_eval_args

pytestmark = pytest.mark.pi


# The hosts that retry a failed model call by themselves (Pi's and Codex's retries are off).
@pytest.mark.parametrize("host", ["gemini-cli", "opencode", "copilot-cli"])
def test_a_script_one_answer_short_fails_on_the_first_request_past_its_end(
    pytester: pytest.Pytester, host: str
) -> None:
    root = pytester.path / "root"
    group = Group(
        id="short",
        type="description",
        turns=["Say hi.", "Say bye."],
        tools=["read"],
        candidate=variant(),
        runtime=runtime(host=host),
        scripts={"baseline": [{"text": "Hi."}], "candidate": [{"text": "Hi."}]},
    )
    suite = build(root, [group])
    args = skill_eval_args(root, "--skill-eval-variant", "baseline", suite=suite)
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    variant_dir = result_dir(root) / "groups" / f"short@{host}" / "baseline"
    run = read_json(variant_dir / "run.json")
    assert run["state"] == "infrastructure-failed"
    assert "script exhausted" in run["error"]["message"]
    failures = [
        e for e in run["process"]["protocolErrors"] if e.get("reason") == "script-exhausted"
    ]
    # One request past the end, not the same one again after each of a host's retries.
    assert len(failures) == 1, failures
    assert len(model_requests(variant_dir)) == 2
