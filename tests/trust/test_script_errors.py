"""A script the model server cannot serve fails its run with one error, never a traceback."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from pytest_skill_eval.modelserver.script import Interaction, Script, ScriptedResponse, ScriptError
from pytest_skill_eval.modelserver.scriptparse import load_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.support.files import write
from tests.support.roots import Group, build, skill, variant
from tests.support.runs import skill_eval_args

# YAML's double-quoted "\ud800" is a lone surrogate: a str that no UTF-8 encoder accepts.
SURROGATE_SCRIPT = 'version: 1\ninteractions:\n  - response:\n      text: "ok \\ud800"\n'


def test_a_lone_surrogate_is_rejected_at_load_naming_file_and_interaction(tmp_path: Path) -> None:
    path = write(tmp_path / "candidate.yaml", SURROGATE_SCRIPT)
    with pytest.raises(ScriptError) as caught:
        load_script(path)
    message = str(caught.value)
    assert str(path) in message
    assert "interactions[0].response.text" in message
    assert "surrogate" in message


def test_a_surrogate_in_a_tool_argument_key_is_named_too(tmp_path: Path) -> None:
    text = (
        "version: 1\ninteractions:\n  - response:\n      tool_calls:\n"
        '        - name: write\n          arguments: {"\\udc80": "x"}\n'
    )
    with pytest.raises(ScriptError, match=r"interactions\[0\]\.response\.tool_calls\[0\]"):
        load_script(write(tmp_path / "candidate.yaml", text))


def test_a_reply_the_server_cannot_build_is_a_route_failure_not_a_traceback(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # Built directly, so load-time validation is bypassed: the server itself must cope.
    source = Path("/suite/scripts/g/candidate.yaml")
    script = Script((Interaction(ScriptedResponse(text="ok \ud800")),), source=source)
    with ScriptedModelServer() as server:
        route = server.open_route(script, source=source)
        url = f"{server.base_url}/r/{route.token}/v1/chat/completions"
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        request = urllib.request.Request(
            url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=30)
        caught.value.close()
    assert caught.value.code == 500
    (failure,) = route.failures
    assert failure.reason == "server-error"
    assert str(source) in failure.message
    assert "Traceback" not in "".join(capfd.readouterr())


@pytest.mark.pi
def test_a_lone_surrogate_is_one_collection_error_and_no_traceback(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "root"
    declared = skill(root, "note-taker")
    group = Group(
        id="surrogate",
        turns=["Say something."],
        tools=["read"],
        fixture=None,
        candidate=variant([declared], 0),
    )
    suite = build(root, [group])
    cassette = write(root / "scripts" / "surrogate" / "candidate.yaml", SURROGATE_SCRIPT)
    done = pytester.runpytest_subprocess(
        *skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    )
    output = "\n".join(done.outlines + done.errlines)
    assert "Traceback" not in output
    assert "UnicodeEncodeError" not in output
    # Refused at collection, before any subject starts: no result, one line naming the script.
    assert done.ret == pytest.ExitCode.INTERRUPTED
    assert f"{cassette}: " in output
    assert "interactions[0].response.text" in output
    assert not list(root.glob(".skill-eval/**/run.json"))
