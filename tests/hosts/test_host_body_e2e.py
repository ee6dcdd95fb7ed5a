"""A body group on each host that runs it alone: the target delivered on turn one the host's way,
the notes read, edited and a report written inside the workspace, nothing of the host's own
left among the changes. One case; what differs by host is a row of `HOSTS`. Gemini CLI and
opencode run the same case inside the run their modules share, Pi in `test_subject_e2e.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import write
from tests.support.hosts import host_params
from tests.support.roots import Group, runtime, skill, variant
from tests.support.runs import check_states, model_requests, result_dir, run_candidate, run_record

pytestmark = pytest.mark.pi

EDIT = {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}
READ = {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}
EDIT_AND_WRITE = {
    "tool_calls": [
        {"name": "edit", "arguments": EDIT},
        {"name": "write", "arguments": {"path": "out/report.md", "content": "ok\n"}},
    ]
}
Checks = Callable[[Path, dict[str, Any], list[dict[str, Any]]], None]


def _claude_code(group_dir: Path, run: dict[str, Any], requests: list[dict[str, Any]]) -> None:
    assert "Base directory for this skill" in json.dumps(requests[0]["body"]["messages"])
    offered = {t["name"] for t in requests[0]["body"]["tools"]}
    assert {"Read", "Write", "Edit", "Skill"} <= offered
    assert not offered & {"Bash", "WebFetch", "WebSearch", "Task"}  # no shell, nothing else


def _codex(group_dir: Path, run: dict[str, Any], requests: list[dict[str, Any]]) -> None:
    assert run["binary"]["enforced"]["sandbox"] == "workspace-write"
    assert "<name>note-taker</name>" in json.dumps(requests[0]["body"]["input"])
    assert check_states(group_dir) == {"read-tool": "unavailable", "patched": "pass"}
    # Codex has no read tool: the check says why it has no observation instead of failing.
    grade = json.loads((group_dir / "deterministic-grade.json").read_text(encoding="utf-8"))
    read_tool = next(c for c in grade["checks"] if c["id"] == "read-tool")
    assert "no read tool" in read_tool["observed"]["reason"]


def _tool_check(check: str, tool: str, expect: str) -> dict[str, str]:
    return {
        "id": check,
        "kind": "tool-call",
        "variant": "candidate",
        "tool": tool,
        "expect": expect,
    }


@dataclass(frozen=True)
class Host:
    """What the body case does and shows on one host."""

    turns: Sequence[str]
    script: Sequence[Mapping[str, Any]]  # the candidate's, before its replies
    delivery: Mapping[str, str]  # what the run records of the target's delivery
    delivered: Sequence[str]  # each turn's prompt as delivered
    activity: Sequence[tuple[str, bool]]  # turn one's tools as the host reports them
    own: Sequence[str]  # the host's own folders, never among the changes
    expectations: Sequence[Mapping[str, Any]] = field(default_factory=list)
    checks: Checks = lambda group_dir, run, requests: None


HOSTS = {
    "claude-code": Host(
        turns=["Tidy the notes.", "Anything else?"],
        script=[READ, EDIT_AND_WRITE],
        delivery={"kind": "explicit-skill-command", "command": "note-taker"},
        delivered=["/note-taker Tidy the notes.", "Anything else?"],
        activity=[("read", False), ("edit", False), ("write", False)],
        own=[".claude"],
        checks=_claude_code,
    ),
    "codex": Host(
        turns=["Tidy the notes."],
        script=[
            {"tool_calls": [{"name": "edit", "arguments": EDIT}]},
            {"tool_calls": [EDIT_AND_WRITE["tool_calls"][1]]},
        ],
        delivery={"kind": "explicit-skill-mention", "mention": "$note-taker"},
        delivered=["$note-taker Tidy the notes."],
        activity=[("apply_patch", False), ("apply_patch", False)],
        own=[".codex", ".agents"],
        expectations=[
            _tool_check("read-tool", "read", "called"),
            _tool_check("patched", "apply_patch", "succeeded"),
        ],
        checks=_codex,
    ),
}
REPLIES = ("Tidied.", "Nothing else.")


@pytest.mark.parametrize("name", host_params(HOSTS))
def test_body_delivers_the_target_on_turn_one_and_edits_and_writes(
    pytester: pytest.Pytester, name: str
) -> None:
    host = HOSTS[name]
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\nbeta\n")
    replies = REPLIES[: len(host.turns)]
    group = Group(
        id="body-write",
        turns=host.turns,
        tools=["read", "write", "edit"],
        runtime=runtime(host=name),
        candidate=variant([skill(root, "note-taker")], 0),
        expectations=host.expectations,
        scripts={"candidate": [*map(dict, host.script), *({"text": r} for r in replies)]},
    )
    result = run_candidate(pytester, root, [group])
    assert result.ret == 0, result.stdout.str()

    run = run_record(root, f"body-write@{name}", "candidate")
    assert run["state"] == "complete", run["error"]
    assert {key: run["delivery"][key] for key in host.delivery} == host.delivery
    assert [t["deliveredPrompt"] for t in run["turns"]] == list(host.delivered)
    assert [t["response"] for t in run["turns"]] == list(replies)
    names = [(a["toolName"], a["isError"]) for a in run["turns"][0]["toolActivity"]]
    assert names == list(host.activity)
    workspace = Path(run["workspace"])
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "alpha\ngamma\n"
    assert (workspace / "out" / "report.md").read_text(encoding="utf-8") == "ok\n"
    changed = json.dumps(run["effects"]["changes"])
    assert "out/report.md" in changed
    for folder in host.own:
        assert folder not in changed
    group_dir = result_dir(root) / "groups" / f"body-write@{name}"
    host.checks(group_dir, run, model_requests(group_dir / "candidate"))
