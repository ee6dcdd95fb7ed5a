"""Each host's catalog read from a request body in its own wire format, and the comparison of
what it lists with each declared `SKILL.md` (`hosts/offered.py`). The bodies are cut down from
what each pinned host sent the loopback server; `test_offered_skills_e2e.py` runs the hosts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.offered import (
    DeclaredSkill,
    Listed,
    declared_skill,
    offered_record,
    offered_state,
)
from pytest_skill_eval.hosts.registration import load
from pytest_skill_eval.hosts.registry import names, registration_for

XML = (
    "Guidelines.\n\n<available_skills>\n  <skill>\n    <name>template-skill</name>\n"
    "    <description>Keep &lt;config&gt; &amp; sync.\n</description>\n"
    "    <location>/s/template-skill/SKILL.md</location>\n  </skill>\n"
    "  <skill>\n    <name>notes</name>\n    <description>Take notes.</description>\n"
    "  </skill>\n</available_skills>"
)
CLAUDE = (
    "You are powered by the model scripted.\n\n"
    "The following skills are available for use with the Skill tool:\n\n"
    "- 1: Bare notes\n- template-skill: Keep &lt;config&gt; & sync.\n- notes\n\n"
    "Today's date is 2026-12-06."
)
CODEX = (
    "<skills_instructions>\n## Skills\n### Skill roots\n- `r0` = `/h/.codex/skills`\n"
    "### Available skills\n"
    "- template-skill: Keep <config> & sync. (file: r0/template-skill/SKILL.md)\n"
    "- notes: Take no... (file: r0/notes/SKILL.md)\n### How to use skills\n- Discovery: ...\n"
    "</skills_instructions>"
)
BODIES: dict[str, dict[str, Any]] = {
    "pi": {"messages": [{"role": "system", "content": XML}, {"role": "user", "content": "hi"}]},
    "claude-code": {
        "system": [{"type": "text", "text": "x-anthropic-billing-header"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": CLAUDE}]}],
    },
    "codex": {
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": CODEX}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ]
    },
    "gemini-cli": {
        "systemInstruction": {"role": "user", "parts": [{"text": XML}]},
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    },
    "opencode": {
        "messages": [{"role": "system", "content": XML}, {"role": "user", "content": "hi"}]
    },
    # Copilot CLI lists them inside its `skill` tool's guidelines.
    "copilot-cli": {
        "messages": [
            {"role": "system", "content": f"<tools>\n<skill>\n{XML}\n</skill>\n</tools>"},
            {"role": "user", "content": "hi"},
        ]
    },
}
LISTED = {
    "pi": (Listed("template-skill", "Keep <config> & sync.\n"), Listed("notes", "Take notes.")),
    "claude-code": (
        Listed("1", "Bare notes"),
        Listed("template-skill", "Keep &lt;config&gt; & sync."),
        Listed("notes", None),
    ),
    "codex": (Listed("template-skill", "Keep <config> & sync."), Listed("notes", "Take no...")),
}
LISTED["gemini-cli"] = LISTED["opencode"] = LISTED["copilot-cli"] = LISTED["pi"]


@pytest.mark.parametrize("host", names())
def test_each_host_reads_its_own_catalog(host: str) -> None:
    read = load(registration_for(host).offered)
    assert read(BODIES[host]) == LISTED[host]
    assert read({"messages": [{"role": "user", "content": "no skills here"}]}) is None


def test_a_description_is_intact_cut_or_altered() -> None:
    assert offered_state("Keep it.\n", "Keep  it.") == "intact"  # whitespace is re-wrapped
    assert offered_state("Take notes.", "Take no...") == "cut"
    assert offered_state("Take notes.", "Take no…") == "cut"
    assert offered_state("Take notes.", "") == "cut"  # listed by name alone
    assert offered_state("Keep <config>.", "Keep &lt;config&gt;.") == "altered"
    assert offered_state(None, "Bare notes") == "altered"


def test_the_record_compares_each_declared_skill_by_name_or_folder() -> None:
    declared = [
        DeclaredSkill(0, "template-skill", "0", "Keep <config> & sync."),
        DeclaredSkill(1, "bare-notes", "1", None),
        DeclaredSkill(2, "missing", "2", "Never listed."),
    ]
    record = offered_record("claude-code", declared, [{}, BODIES["claude-code"]], _claude)
    assert record["request"] == 1
    assert record["others"] == ["notes"]
    by_name = {s["name"]: s for s in record["skills"]}
    assert by_name["template-skill"]["state"] == "altered"
    assert by_name["bare-notes"] == {
        "index": 1,
        "name": "bare-notes",
        "state": "altered",
        "description": "Bare notes",
        "declaredChars": None,
        "offeredChars": 10,
    }
    assert by_name["missing"]["state"] == "absent"
    assert by_name["missing"]["description"] is None


def _claude(body: Any) -> Any:
    return load(registration_for("claude-code").offered)(body)


def test_without_requests_every_skill_is_unobservable() -> None:
    declared = [DeclaredSkill(0, "notes", "0", "Take notes.")]
    live = offered_record("pi", declared, None, _claude)
    assert live["skills"][0]["state"] == "unobservable"
    assert "live run" in live["skills"][0]["reason"]
    silent = offered_record("pi", declared, [], _claude)
    assert silent["skills"][0]["reason"] == "the host sent no model request"


def test_a_skill_without_front_matter_is_named_by_its_declared_folder(tmp_path: Path) -> None:
    snapshot = tmp_path / "0"
    snapshot.mkdir()
    (snapshot / "SKILL.md").write_text("# Bare notes\n")
    assert declared_skill(3, snapshot, "skills/bare-notes") == DeclaredSkill(
        3, "bare-notes", "0", None
    )
    (snapshot / "SKILL.md").write_text("---\nname: notes\ndescription: >-\n  Take\n  notes.\n---\n")
    assert declared_skill(0, snapshot, "skills/x") == DeclaredSkill(0, "notes", "0", "Take notes.")
    (snapshot / "SKILL.md").write_text("---\nname: [unclosed\n---\n")
    assert declared_skill(0, snapshot, "skills/x").description is None
