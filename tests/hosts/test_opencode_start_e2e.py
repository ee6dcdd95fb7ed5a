"""What makes opencode's start cheaper (an empty models database, no FTL JIT tier) leaves
what the subject is offered as it was: the real pinned binary, started as the evaluator starts
it, asks the scripted model the same request with and without them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import write

pytestmark = pytest.mark.pi

# A model id the bundled models database knows under other providers: the evaluator's own
# provider must describe it the same either way.
MODEL = {"model": "openai/gpt-4.1"}


def _first_request(base: Path, savings: bool) -> dict[str, Any]:
    """The one model request of a scripted one-turn run in `base` (made afresh, so both runs
    see the same paths), opencode started as the evaluator starts it: a declared skill, `read`
    and `write`; without `savings`: with opencode's own models database instead of the empty
    one the evaluator gives a served run, and its runtime's every JIT tier (FTL too)."""
    from pytest_skill_eval.hosts import checked_binary
    from pytest_skill_eval.hosts.base import Endpoint, Launch, ServedModel
    from pytest_skill_eval.hosts.dialect import renderer
    from pytest_skill_eval.hosts.opencode.environment import MODELS_PATH, RUNTIME
    from pytest_skill_eval.hosts.opencode.host import OpencodeHost
    from pytest_skill_eval.hosts.options import HostOptions
    from pytest_skill_eval.modelserver.scriptparse import parse_script
    from pytest_skill_eval.modelserver.server import ScriptedModelServer
    from pytest_skill_eval.modelserver.wire import OPENAI

    binary = checked_binary("opencode", HostOptions(), Path.cwd())
    shutil.rmtree(base, ignore_errors=True)
    workspace = base / "work"
    workspace.mkdir(parents=True)
    skill = base / "skills" / "greet"
    write(skill / "SKILL.md", "---\nname: greet\ndescription: Greets the user.\n---\nSay hi.\n")
    script = parse_script({"version": 1, "interactions": [{"response": {"text": "done"}}]})
    with ScriptedModelServer() as server:
        route = server.open_route(script, render=renderer("opencode"))
        served = ServedModel(route, OPENAI, "skill-eval", "gpt-4.1")
        host = OpencodeHost()
        home = host.prepare(base / "run", Endpoint("scripted", dict(MODEL), served))
        launch = Launch(
            workspace,
            ("Say done.",),
            True,
            base / "events",
            base / "stderr",
            model=MODEL,
            tools=("read", "write"),
            skills=(skill,),
        )
        command = host.command(binary, launch, home)
        env = command.env
        assert Path(env[MODELS_PATH]).read_text(encoding="utf-8") == "{}\n"
        assert env["BUN_JSC_useFTLJIT"] == "0"
        if not savings:
            for name in (MODELS_PATH, *RUNTIME):
                del env[name]
        done = subprocess.run(
            command.argv, cwd=workspace, env=env, input=launch.prompts[0].encode(),
            capture_output=True, timeout=300,
        )  # fmt: skip
        route.close()
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(route.requests) == 1, [r.path for r in route.requests]
    return route.requests[0].body


def test_a_cheaper_start_offers_the_same_tools_prompt_and_request(tmp_path: Path) -> None:
    # Both starts accepted their environment (a runtime option Bun did not know would stop it).
    bundled = _first_request(tmp_path / "subject", savings=False)
    ours = _first_request(tmp_path / "subject", savings=True)
    tools = sorted(t["function"]["name"] for t in ours["tools"])
    assert {"read", "write", "skill"} <= set(tools)
    assert "<name>greet</name>" in ours["messages"][0]["content"]
    assert tools == sorted(t["function"]["name"] for t in bundled["tools"])
    assert ours["messages"] == bundled["messages"]  # the system prompt and the prompt
    assert ours == bundled  # and every other field: tools' schemas, limits, options
