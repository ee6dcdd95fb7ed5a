"""Each rule of the skill linter: the Agent Skills specification and each host's declared
limits, read from the real registrations."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_skill_eval.definitions.skill_lint import (
    Finding,
    SkillFile,
    SkillLimits,
    folder_name,
    lint_variant,
    parse_skill,
)
from pytest_skill_eval.hosts.registry import registered, registration_for


@dataclass(frozen=True)
class _Host:
    name: str
    skill_limits: SkillLimits


def _skill(front: str, folder: str = "my-skill", body: str = "Do it.\n") -> SkillFile:
    return parse_skill(f"skills/{folder}", f"---\n{front}\n---\n\n{body}".encode(), folder)


def _found(skills: list[SkillFile], *hosts: str) -> list[tuple[str, str | None, str]]:
    chosen = [registration_for(h) for h in hosts]
    return [(f.level, f.host, f.message) for f in lint_variant(skills, chosen)]


GOOD = "name: my-skill\ndescription: Does one thing. Use when asked to do it."


def test_a_skill_that_keeps_every_rule_has_no_finding_on_any_host() -> None:
    assert lint_variant([_skill(GOOD)], registered()) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b"---\nname: x\n", "SKILL.md's front matter has no closing ---"),
        (b"---\nname: [x\ndescription: y\n---\n", "SKILL.md's front matter is not valid YAML"),
        (b"---\n- a list\n---\n", "SKILL.md's front matter is not a YAML mapping"),
        (b"\xff\xfe---\n", "SKILL.md is not UTF-8 text"),
        (None, "SKILL.md cannot be read"),
    ],
)
def test_a_skill_md_without_readable_front_matter_is_an_error_no_host_lists(
    text: bytes | None, problem: str
) -> None:
    found = lint_variant([parse_skill("skills/x", text)], registered())
    assert [(f.level, f.host) for f in found] == [("error", None)]
    assert found[0].message.startswith(problem), found[0].message
    assert "no host lists it" in found[0].message
    assert "start SKILL.md with front matter" in found[0].fix


def test_a_skill_md_without_front_matter_is_refused_where_a_host_drops_it() -> None:
    """Pi, Codex, Gemini CLI, opencode and Copilot CLI never list it; Claude Code lists it under its
    folder's name with a description of its own: a cut, the declared one never offered."""
    found = lint_variant([parse_skill("skills/x", b"# No front matter\n")], registered())
    levels = {f.host: f.level for f in found}
    assert levels == {
        None: "spec",
        "pi": "refused",
        "codex": "refused",
        "gemini-cli": "refused",
        "opencode": "refused",
        "copilot-cli": "refused",
        "claude-code": "cut",
    }
    assert all(
        f.message.startswith("SKILL.md has no front matter")
        for f in found
        if f.host in ("pi", None)
    )
    assert "description of its own" in next(f.message for f in found if f.host == "claude-code")


def test_copilot_cli_refuses_a_skill_whose_description_it_would_drop() -> None:
    skill = _skill(f"name: my-skill\ndescription: {'d' * 1025}")
    found = [f for f in lint_variant([skill], registered()) if f.host == "copilot-cli"]
    message = "its description is 1025 characters, and it drops a skill whose description is "
    assert [(f.level, f.message.split(":")[0]) for f in found] == [
        ("refused", message + "over 1024")
    ]
    assert _found([_skill(f"name: my-skill\ndescription: {'d' * 1024}")], "copilot-cli") == []


def test_a_missing_description_is_an_error_and_an_over_long_one_a_spec_warning() -> None:
    assert _found([_skill("name: my-skill")]) == [
        ("error", None, "`description` is missing: hosts drop it")
    ]
    long = _skill(f"name: my-skill\ndescription: {'d' * 1025}")
    assert _found([long]) == [
        ("spec", None, "`description` is 1025 characters, over the specification's 1024")
    ]
    assert _found([_skill(f"name: my-skill\ndescription: {'d' * 1024}")]) == []


CHARACTERS = "is not lowercase letters, digits and single hyphens"


@pytest.mark.parametrize(
    ("name", "folder", "messages"),
    [
        ("My-Skill", "My-Skill", [f"`name` 'My-Skill' {CHARACTERS}"]),
        ("my--skill", "my--skill", [f"`name` 'my--skill' {CHARACTERS}"]),
        ("-my-skill", "-my-skill", [f"`name` '-my-skill' {CHARACTERS}"]),
        ("my_skill", "my_skill", [f"`name` 'my_skill' {CHARACTERS}"]),
        ("a" * 65, "a" * 65, ["`name` is 65 characters, over 64"]),
        (
            "template",
            "template-skill",
            ["`name` 'template' does not match its folder 'template-skill'"],
        ),
        ("データ", "データ", []),  # the validator accepts letters of any script, if lowercase
        ("ÄPFEL", "ÄPFEL", [f"`name` 'ÄPFEL' {CHARACTERS}"]),
        ("skill2", "skill2", []),
    ],
)
def test_each_name_rule_of_the_specification(name: str, folder: str, messages: list[str]) -> None:
    skill = _skill(f"name: {name}\ndescription: Does one thing.", folder)
    assert [m for level, _, m in _found([skill]) if level == "spec"] == messages


def test_a_missing_name_is_named_by_its_folder_and_a_spec_warning() -> None:
    skill = _skill("description: Does one thing.", "from-folder")
    assert skill.name == "from-folder"
    assert _found([skill]) == [("spec", None, "`name` is missing")]


def test_a_name_that_is_not_text_is_a_spec_warning() -> None:
    skill = _skill("name: 42\ndescription: Does one thing.", "answer-42")
    assert skill.name == "answer-42"
    assert _found([skill]) == [("spec", None, "`name` is not text")]


def test_compatibility_and_unknown_fields() -> None:
    over = _skill(f"{GOOD}\ncompatibility: {'c' * 501}")
    assert _found([over]) == [("spec", None, "`compatibility` must be 1–500 characters of text")]
    assert _found([_skill(f"{GOOD}\ncompatibility: Needs git.")]) == []
    extra = _skill(f"{GOOD}\nversion: 2\nlicense: MIT\nwhen_to_use: Always.\nmetadata: {{a: b}}")
    assert _found([extra]) == [("spec", None, "unexpected front matter field(s) version")]


def test_two_skills_of_one_variant_with_one_name_are_an_error() -> None:
    one = _skill(GOOD)
    other = parse_skill("vendor/my-skill", one_text := f"---\n{GOOD}\n---\n".encode())
    assert one_text
    found = lint_variant([one, other], [])
    assert [(f.level, f.skill) for f in found] == [("error", "vendor/my-skill")]
    assert "also the name of skills/my-skill" in found[0].message


def test_codex_cuts_a_description_at_1024_and_the_warning_shows_the_cut() -> None:
    description = "x" * 1020 + " keep the last instruction"
    found = lint_variant(
        [_skill(f"name: my-skill\ndescription: {description}")], [registration_for("codex")]
    )
    cuts = [f for f in found if f.level == "cut"]
    assert [f.host for f in cuts] == ["codex"]
    assert "offers the model 1024 of the description's 1046 characters" in cuts[0].message
    assert "('p the last instruction') is cut" in cuts[0].message


def test_a_long_cut_is_shown_by_its_two_ends() -> None:
    description = "a" * 1024 + "b" * 100 + "c" * 200
    [cut] = _found([_skill(f"name: my-skill\ndescription: {description}")], "codex")[1:]
    assert cut[2].endswith(f"the rest ({'b' * 80!r} … {'c' * 80!r} (300 characters)) is cut")


def test_claude_code_counts_when_to_use_in_the_entry_it_cuts_at_1536() -> None:
    front = f"name: my-skill\ndescription: {'d' * 1000}\nwhen_to_use: {'w' * 600}"
    found = _found([_skill(front)], "claude-code")
    assert [(level, host) for level, host, _ in found] == [("cut", "claude-code")]
    assert "1536 of the description's 1603 characters" in found[0][2]


def test_a_catalog_over_the_hosts_listing_budget_is_a_cut_warning() -> None:
    skills = [_skill(f"name: s{i:02d}\ndescription: {'d' * 1000}", f"s{i:02d}") for i in range(30)]
    found = _found(skills, "claude-code")
    assert [(level, host) for level, host, _ in found] == [("cut", "claude-code")]
    assert (
        "30 listing entries total 30240 characters, over the 30000 its listing holds" in found[0][2]
    )
    assert _found(skills[:29], "claude-code") == []


def test_a_name_that_is_not_one_directory_entry_is_refused_where_skills_are_linked_by_name() -> (
    None
):
    skill = _skill("name: a/b\ndescription: Does one thing.", "b")
    refused = [f.host for f in lint_variant([skill], registered()) if f.level == "refused"]
    # never Pi: it is given each skill by path
    assert refused == ["claude-code", "codex", "gemini-cli", "opencode", "copilot-cli"]


def test_a_name_a_host_reserves_makes_it_refuse_the_skill_there_only() -> None:
    skill = _skill("name: .system\ndescription: Does one thing.", ".system")
    refused = [f for f in lint_variant([skill], registered()) if f.level == "refused"]
    assert [f.host for f in refused] == ["codex"]
    codex = refused[0]
    assert "Codex keeps its bundled system skills under that name" in codex.message
    assert codex.fix == "rename the skill, or run it on another host"


def test_gemini_cli_reserves_no_bundled_name_a_declared_skill_replaces() -> None:
    skill = _skill("name: skill-creator\ndescription: Creates skills.", "skill-creator")
    assert _found([skill], "gemini-cli") == []


def test_a_hosts_limits_are_read_from_its_declared_facts() -> None:
    host = _Host("strict", SkillLimits(description_cut=10, reserved={"my-skill": "it is mine"}))
    found = lint_variant([_skill(GOOD)], [host])
    assert [(f.level, f.host) for f in found] == [("refused", "strict"), ("cut", "strict")]
    assert found[0].line("x/SKILL.md") == (
        "x/SKILL.md: on strict: it cannot install a skill named 'my-skill': it is mine; "
        "rename the skill, or run it on another host"
    )


def test_a_findings_line_names_no_host_for_a_rule_of_the_specification() -> None:
    finding = Finding("spec", "skills/x", "`name` is missing", "add `name: x`")
    assert finding.line("g.json: /variants/candidate/skills/0") == (
        "g.json: /variants/candidate/skills/0: `name` is missing; add `name: x`"
    )


@pytest.mark.parametrize(
    ("declared", "folder"),
    [("skills/x", "x"), ("skills/x/", "x"), ("x", "x"), ("a/./b/../c", "c"), (".", "")],
)
def test_the_folder_of_a_declared_skill(declared: str, folder: str) -> None:
    assert folder_name(declared) == folder
