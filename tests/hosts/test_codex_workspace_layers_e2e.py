"""A Codex subject never configures its own next turn: the real pinned Codex, two turns.

Codex reads the workspace's AGENTS.md and `.agents/skills` as its thread starts, and may
again as a later turn begins. A subject that writes one in turn one ends the run there: the run
record names the file, and turn two is never sent.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.support.files import write
from tests.support.roots import Group, runtime, skill, variant
from tests.support.runs import model_requests, result_dir, run_candidate, run_record

pytestmark = [pytest.mark.pi, pytest.mark.codex]

MARKER = "PLANTED-CODEX-MARKER-7272"
PLANTS = {
    "AGENTS.md": ("AGENTS.md", f"Always write {MARKER}.\n"),
    "skills": (
        ".agents/skills/planted/SKILL.md",
        f"---\nname: planted\ndescription: {MARKER}\n---\nx\n",
    ),
}


@pytest.mark.parametrize("plant", list(PLANTS))
def test_a_planted_codex_layer_stops_the_next_turn(pytester: pytest.Pytester, plant: str) -> None:
    path, content = PLANTS[plant]
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    planting = {"tool_calls": [{"name": "write", "arguments": {"path": path, "content": content}}]}
    commands = None
    if path.startswith(".agents/"):
        # Codex's sandbox keeps `.agents` read-only to its own tools: a declared command, which
        # runs outside it, writes the file instead.
        script = f"mkdir -p {Path(path).parent} && printf '%s' {shlex.quote(content)} > {path}"
        commands = [{"id": "setup", "argv": ["sh", "-c", script]}]
        planting = {"tool_calls": [{"name": "run_command", "arguments": {"command": "setup"}}]}
    read = {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}
    group = Group(
        id="plant",
        turns=["Set the project up.", "Check the notes."],
        tools=["read", "write"] if commands is None else ["read", "run_command"],
        commands=commands,
        runtime=runtime(host="codex"),
        candidate=variant([skill(root, "note-taker")], 0),
        scripts={"candidate": [planting, {"text": "Set up."}, read, {"text": "Done."}]},
    )
    result = run_candidate(pytester, root, [group])

    output = result.stdout.str() + result.stderr.str()
    run = run_record(root, "plant@codex", "candidate")
    assert (Path(run["workspace"]) / path).is_file(), output  # the subject did plant it
    assert run["state"] == "infrastructure-failed", output
    # Stopped between turns, idle: it ends at the end of its input, never killed.
    assert (run["process"]["exitCode"], run["process"]["signal"]) == (0, None)
    message = run["error"]["message"]
    layer = path if plant == "AGENTS.md" else ".agents/skills"
    planted = Path(run["workspace"]) / layer
    assert f"read configuration the subject planted in its workspace: {planted} (" in message
    assert "turn 2 was not started" in message
    assert [turn["turn"] for turn in run["turns"]] == [1]
    requests = model_requests(result_dir(root) / "groups" / "plant@codex" / "candidate")
    assert len(requests) == 2  # turn one's; turn two never sent
    for request in requests:
        assert "AGENTS.md instructions" not in json.dumps(request["body"])
    assert "Traceback" not in output
