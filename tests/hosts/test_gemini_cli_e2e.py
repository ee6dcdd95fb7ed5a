"""Gemini CLI end to end: the real pinned CLI against the scripted loopback server.

One run shares its evidence with several tests (module-scoped): activation through
`activate_skill`, the path guard, reads, writes and edits in the workspace, multi-turn through
`--resume` (past the registry lock Gemini CLI sometimes leaves), and what never reaches the
model (the operator's `~/.gemini`, GEMINI.md and `.env` files above the workspace, the bundled
skills, the shell).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import write
from tests.support.namespaces import loopback_only, loopback_only_available
from tests.support.operator import assert_in_no_file, invisible_skill
from tests.support.roots import Group, build, context_check, runtime, skill, variant
from tests.support.runs import model_requests, result_dir, run_record, skill_eval_args

pytestmark = [pytest.mark.pi, pytest.mark.gemini]

OPERATOR_KEY = "AIza-operator-secret-0000"
GROUP = "gemini@gemini-cli"


def all_text(request: dict[str, Any]) -> str:
    """The whole request body as text (system instruction, contents, tools)."""
    return json.dumps(request["body"], ensure_ascii=False)


Run = tuple[Path, dict[str, Any], list[dict[str, Any]]]


NETNS = loopback_only_available()

# The nested run's conftest: before turn two, the project registry's lock that an exited Gemini
# CLI now and then leaves in its home (the next process would wait 12.7 s or more on it); as the
# next process starts, whether it is still there (`lock.log`).
LEFT_LOCK = """
import os
from pathlib import Path
from pytest_skill_eval.hosts import dialogue
from pytest_skill_eval.hosts.gemini_cli import host

def lock(self):
    return Path(self._process.env["GEMINI_CLI_HOME"]) / host.REGISTRY_LOCK

later_argv = host.GeminiDialogue._later_argv
def _later_argv(self, prompt):
    lock(self).mkdir()
    return later_argv(self, prompt)
host.GeminiDialogue._later_argv = _later_argv

next_process = dialogue.ProcessPerTurnDialogue._next_process
def _next_process(self, number, argv, registration, stdin=None):
    with open(Path(__file__).parent / "lock.log", "a") as log:
        log.write(f"turn {number}: {'held' if os.path.lexists(lock(self)) else 'free'}\\n")
    return next_process(self, number, argv, registration, stdin)
dialogue.ProcessPerTurnDialogue._next_process = _next_process
"""


def commands_group(declared: str) -> Group:
    """Gemini CLI's own system prompt with declared context, and declared commands."""
    return Group(
        id="commands",
        turns=["Check the notes."],
        tools=["read", "run_command"],
        runtime=runtime(prompt="host", host="gemini-cli"),
        candidate=variant([declared], 0, ["context/style.md"]),
        commands=[{"id": "look", "argv": ["sh", "-c", "echo looked in $(pwd)"]}],
        expectations=[context_check("system-prompt", "CONTEXT-MARKER-7")],
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "look"}}]},
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "rm-rf"}}]},
                {"text": "Checked."},
            ]
        },
    )


@pytest.fixture(scope="module")
def gemini_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One two-turn run on Gemini CLI, an operator's home and instructions files planted."""
    base = tmp_path_factory.mktemp("gemini")
    operator_home = base / "operator-home"
    invisible_skill(operator_home / ".gemini" / "skills", "operator-only-skill")
    write(operator_home / ".gemini" / "GEMINI.md", "OPERATOR-MEMORY-MARKER\n")
    write(operator_home / ".gemini" / ".env", "GEMINI_SYSTEM_MD=/nonexistent\n")
    write(base / "GEMINI.md", "ABOVE-ROOT-MEMORY-MARKER\n")
    root = base / "root"
    write(root / "GEMINI.md", "ROOT-MEMORY-MARKER\n")
    write(root / "outside.txt", "not for the subject\n")
    write(root / "fixture" / "notes.txt", "alpha\nbeta\n")
    write(root / "context" / "style.md", "Always write CONTEXT-MARKER-7 in replies.\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="gemini",
        turns=["Tidy the notes.", "Anything else?"],
        tools=["read", "write", "edit"],
        runtime=runtime(host="gemini-cli"),
        candidate=variant([declared], 0, ["context/style.md"]),
        expectations=[context_check("system-prompt", "CONTEXT-MARKER-7")],
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "skill", "arguments": {"name": "note-taker"}}]},
                {
                    "tool_calls": [
                        {"name": "read", "arguments": {"path": "notes.txt"}},
                        {"name": "read", "arguments": {"path": str(root / "outside.txt")}},
                    ]
                },
                {
                    "tool_calls": [
                        {
                            "name": "edit",
                            "arguments": {
                                "path": "notes.txt",
                                "edits": [{"oldText": "beta", "newText": "gamma"}],
                            },
                        },
                        {
                            "name": "write",
                            "arguments": {"path": "out/report.md", "content": "ok\n"},
                        },
                        {
                            "name": "write",
                            "arguments": {"path": "{{skill:0}}/SKILL.md", "content": "x"},
                        },
                        {
                            "name": "write",
                            "arguments": {"path": str(base / "escape.txt"), "content": "x"},
                        },
                    ]
                },
                {"text": "Tidied."},
                {"text": "Nothing else."},
            ]
        },
    )
    build(root, [group, commands_group(declared)])
    write(root / "conftest.py", LEFT_LOCK)
    environment = {**os.environ, "HOME": str(operator_home), "GEMINI_API_KEY": OPERATOR_KEY}
    environment = {k: v for k, v in environment.items() if not k.startswith("PYTEST_")}
    command = [sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(root)]
    command += [f"--basetemp={base / 'basetemp'}"]
    command += skill_eval_args(root, "--skill-eval-variant", "candidate")
    if NETNS:
        # Loopback only: the whole run happens in a network namespace with nothing else.
        command = loopback_only(command)
    done = subprocess.run(
        command, cwd=root, env=environment, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run = run_record(root, GROUP, "candidate")
    requests = model_requests(result_dir(root) / f"groups/{GROUP}/candidate")
    return root, run, requests


def test_the_skill_is_activated_and_files_change_inside_the_workspace(
    gemini_run: Run,
) -> None:
    root, run, requests = gemini_run
    assert run["state"] == "complete", run["error"]
    assert run["process"]["host"] == "gemini-cli"
    assert run["binary"]["version"] == "0.61.0"
    assert run["binary"]["runtime"] is not None  # on the pinned Node, not a shebang's
    assert run["activation"]["targetRead"] is True
    first, second = run["turns"]
    names = [(a["toolName"], a["isError"]) for a in first["toolActivity"]]
    assert names == [
        ("skill", False),
        ("read", False),
        ("read", True),  # a read outside the workspace is refused
        ("edit", False),
        ("write", False),
        ("write", True),  # the guard refused a write to a declared resource
        ("write", True),  # a write outside is refused
    ]
    assert [first["response"], second["response"]] == ["Tidied.", "Nothing else."]
    workspace = Path(run["workspace"])
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "alpha\ngamma\n"
    assert (workspace / "out" / "report.md").read_text(encoding="utf-8") == "ok\n"
    assert not (root.parent / "escape.txt").exists()
    assert ".gemini" not in json.dumps(run["effects"]["changes"])
    assert "<activated_skill" in all_text(requests[1])
    assert "Path not in workspace" in all_text(requests[2])  # Gemini CLI's own refusal
    assert "path escapes the evaluation environment" in all_text(requests[3])  # the guard's
    assert Path(run["resources"]["targetPath"]).read_text(encoding="utf-8") != "x"


def test_the_second_turn_resumes_the_session(
    gemini_run: Run,
) -> None:
    _, _, requests = gemini_run
    assert len(requests) == 5
    last = requests[4]["body"]["contents"]
    texts = [p.get("text") for c in last for p in c["parts"]]
    assert "Tidy the notes." in texts  # turn one is in turn two's request
    assert texts[-1] == "Anything else?"


def test_a_registry_lock_left_by_turn_one_is_released_before_turn_two_starts(
    gemini_run: Run,
) -> None:
    root, run, _ = gemini_run
    assert (root / "lock.log").read_text(encoding="utf-8") == "turn 2: free\n"
    assert [turn["response"] for turn in run["turns"]] == ["Tidied.", "Nothing else."]


def test_nothing_of_the_operators_reaches_the_model(
    gemini_run: Run,
) -> None:
    root, _, requests = gemini_run
    offered = {f["name"] for t in requests[0]["body"]["tools"] for f in t["functionDeclarations"]}
    assert offered == {"read_file", "write_file", "replace", "activate_skill"}  # no shell
    for request in requests:
        text = all_text(request)
        assert "note-taker" in text
        for marker in (
            "operator-only-skill",
            "OPERATOR-MEMORY",
            "ABOVE-ROOT",
            "ROOT-MEMORY",
            "skill-creator",
            "antigravity",
        ):
            assert marker not in text
    assert_in_no_file(result_dir(root), OPERATOR_KEY)


def test_declared_context_reaches_the_system_prompt_in_both_prompt_modes(gemini_run: Run) -> None:
    root, _, _ = gemini_run
    for group in (GROUP, "commands@gemini-cli"):
        grade = json.loads(
            (result_dir(root) / "groups" / group / "deterministic-grade.json").read_text("utf-8")
        )
        assert {c["id"]: c["state"] for c in grade["checks"]} == {
            "context-system-prompt": "pass"
        }, group


def test_declared_commands_run_through_the_evaluators_tool_server(gemini_run: Run) -> None:
    root, _, _ = gemini_run
    run = run_record(root, "commands@gemini-cli", "candidate")
    assert run["state"] == "complete", run["error"]
    records = [(a["toolName"], a["isError"]) for a in run["turns"][0]["toolActivity"]]
    assert records == [("run_command", False), ("run_command", True)]
    requests = model_requests(result_dir(root) / "groups/commands@gemini-cli/candidate")
    offered = {f["name"] for t in requests[0]["body"]["tools"] for f in t["functionDeclarations"]}
    assert offered == {"read_file", "activate_skill", "mcp_skill-eval_run_command"}  # no shell
    assert f"looked in {Path(run['workspace']).resolve()}" in all_text(requests[1])


@pytest.mark.skipif(not NETNS, reason="needs unshare and ip for a loopback-only network namespace")
def test_the_runs_need_no_network_but_loopback(gemini_run: Run) -> None:
    # The module's run happened inside `unshare -rn`: nothing but loopback existed there.
    _, run, requests = gemini_run
    assert run["state"] == "complete", run["error"]
    assert len(requests) == 5
