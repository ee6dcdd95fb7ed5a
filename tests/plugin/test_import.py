"""`skill-eval import`: other formats' suites as schema-v1 suites that collect and replay, with
everything that could not be carried listed, never overwriting."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.commands.importing.graders import text_check
from tests.plugin.test_init import _pytest
from tests.support.files import read_json, write
from tests.support.paths import EXAMPLE
from tests.views.test_cli_errors import assert_one_line_error, skill_eval

SKILL = EXAMPLE / "skills" / "changelog-keeper" / "SKILL.md"

CASE_YAML = """\
schema_version: "1.1"
name: adds-entry
runs: 3
execution:
  prompt: Record the fix of issue 42 in the changelog.
  allowed_tools: [Read, Write, Glob, Bash]
graders:
  - {name: fires, type: tool_used, tool: Skill, input_match: "changelog-kit:changelog-keeper"}
  - {name: mentions, type: regex, pattern: "\\\\(#42\\\\)"}
  - {name: entry, type: regex, target: {source: file, path: CHANGELOG.md}, pattern: "^### Fixed$"}
  - {name: loose, type: regex, pattern: "fix(ed)?", flags: i}
  - {name: wrote, type: file_exists, path: CHANGELOG.md}
  - {name: any-md, type: file_exists, path: "**/*.md"}
  - {name: order, type: tool_order, before: Read, after: Write}
  - {name: reads-twice, type: tool_used, tool: Read, min: 2}
"""


def _plugin(tmp_path: Path) -> Path:
    """A plugin of one skill and two cases: `case.yaml`, and `prompt.md` with a judge."""
    plugin = tmp_path / "changelog-kit"
    write(plugin / ".claude-plugin" / "plugin.json", '{"name": "changelog-kit"}')
    shutil.copy(SKILL, write(plugin / "skills" / "changelog-keeper" / "SKILL.md", ""))
    write(plugin / "evals" / "adds-entry" / "case.yaml", CASE_YAML)
    prose = plugin / "evals" / "prose"
    write(prose / "prompt.md", "---\nallowed_tools: [Read, Skill]\n---\n\nWhat does it do?\n")
    judge = "---\ntype: llm\n---\n\nThe answer invents no feature.\n"
    write(prose / "graders" / "criteria.md", judge)
    write(prose / "graders" / "quiet.md", "---\ntype: tool_used\ntool: Skill\nmax: 0\n---\n")
    write(plugin / "evals" / "mocks" / "tracker.json", "{}")
    return plugin


def _collected(root: Path, suite: Path) -> list[str]:
    """The item ids `pytest --collect-only` lists for the written suite, run from `root`."""
    scripts = str(suite.parent / "scripts")
    args = ("--collect-only", "-q", "--skill-eval", str(suite), "--skill-eval-cassettes", scripts)
    done = _pytest(root, *args)
    return [line.split("::", 1)[1] for line in done.stdout.splitlines() if "::" in line]


def test_a_plugin_imports_its_mapped_graders_and_lists_the_rest_and_collects(
    tmp_path: Path,
) -> None:
    plugin = _plugin(tmp_path)
    done = skill_eval("import", str(plugin))
    assert done.returncode == 0, done.stderr
    suite = plugin / "skill-eval" / "suite.json"
    assert f"wrote {suite} (4 groups" in done.stdout
    for line in (
        "not imported: case adds-entry: order (tool_order): no check orders tool calls",
        "not imported: case adds-entry: loose (regex): regex flags i",
        "not imported: case adds-entry: any-md (file_exists): glob **/*.md",
        "not imported: case adds-entry: reads-twice (tool_used Read): min 2, max unbounded",
        "not imported: case adds-entry: allowed_tools Bash",
        "not imported: case adds-entry: runs 3",
        "not imported: changelog-kit: mocks: MCP mocks: no MCP server is mocked",
        "not graded: case prose: criteria (llm): a review question",
        "approximate: case adds-entry: the case: body group adds-entry: the skill is delivered",
    ):
        assert line in done.stdout
    body = read_json(plugin / "skill-eval" / "groups" / "adds-entry.json")
    assert body["tools"] == ["read", "write"]
    checks = {e["id"]: e for e in body["expectations"]}
    assert checks["candidate-mentions"] == {
        "id": "candidate-mentions",
        "variant": "candidate",
        "kind": "response-text",
        "expect": "contains",
        "value": "(#42)",
        "comparison": "mentions",
    }
    assert checks["baseline-entry"]["expect"] == "equals"
    assert checks["candidate-wrote"]["kind"] == "path"
    prose = read_json(plugin / "skill-eval" / "groups" / "prose.json")
    assert prose["review_questions"] == ["The answer invents no feature."]
    assert prose["expectations"] == []
    trigger = read_json(plugin / "skill-eval" / "groups" / "prose-trigger.json")
    assert {e["expect"] for e in trigger["expectations"]} == {"never"}
    report = (plugin / "skill-eval" / "IMPORTED.md").read_text(encoding="utf-8")
    assert "| case prose | criteria (llm) | a review question |" in report
    assert "| case adds-entry | order (tool_order) | no check orders tool calls |" in report

    assert _collected(plugin, suite) == [
        f"{group}[{variant}]"
        for group in ("adds-entry-trigger", "adds-entry", "prose-trigger", "prose")
        for variant in ("baseline", "candidate")
    ]


def _skill(tmp_path: Path) -> Path:
    skill = tmp_path / "skills" / "changelog-keeper"
    shutil.copy(SKILL, write(skill / "SKILL.md", ""))
    return skill


@pytest.mark.parametrize("spelling", ["assertions", "expectations"])
def test_an_evals_json_becomes_body_groups_whose_assertions_are_review_questions(
    tmp_path: Path, spelling: str
) -> None:
    skill = _skill(tmp_path)
    write(skill / "evals" / "files" / "CHANGELOG.md", "# Changelog\n")
    evals = [
        {
            "id": 1,
            "prompt": "Add the fix of issue 42.",
            "expected_output": "A Fixed entry naming #42",
            "files": ["evals/files/CHANGELOG.md"],
            spelling: ["The entry is under ### Fixed"],
        },
        {"id": "two", "prompt": "Summarise the unreleased changes.", spelling: ["All listed"]},
    ]
    source = write(skill / "evals" / "evals.json", json.dumps({"evals": evals}))
    done = skill_eval("import", str(source))
    assert done.returncode == 0, done.stderr
    folder = skill.parent / "evals" / "changelog-keeper-evals"
    group = read_json(folder / "groups" / "eval-1.json")
    assert group["review_questions"] == [
        "Does the outcome match what is expected: A Fixed entry naming #42",
        "The entry is under ### Fixed",
    ]
    assert group["fixture"] == "evals/changelog-keeper-evals/fixtures/eval-1"
    fixture = folder / "fixtures" / "eval-1" / "CHANGELOG.md"
    assert fixture.read_text(encoding="utf-8") == "# Changelog\n"
    report = (folder / "IMPORTED.md").read_text(encoding="utf-8")
    assert f"| eval two | {spelling[:-1]}: All listed | a review question |" in report
    assert _collected(skill.parent, folder / "suite.json") == [
        "eval-1[baseline]",
        "eval-1[candidate]",
        "eval-two[baseline]",
        "eval-two[candidate]",
    ]


def _triggers(tmp_path: Path) -> Path:
    queries = [
        {"query": "Add an entry to CHANGELOG.md for the bug I fixed", "should_trigger": True},
        {"query": "What is the capital of France?", "should_trigger": False},
    ]
    return write(_skill(tmp_path) / "evals" / "triggers.json", json.dumps(queries))


def test_a_trigger_set_becomes_read_and_never_read_description_groups(tmp_path: Path) -> None:
    source = _triggers(tmp_path)
    assert skill_eval("import", str(source)).returncode == 0
    folder = tmp_path / "skills" / "evals" / "changelog-keeper-triggers"
    fires = read_json(folder / "groups" / "should-trigger-01.json")
    assert fires["type"] == "description"
    assert [e["expect"] for e in fires["expectations"]] == ["by-turn", "by-turn"]
    quiet = read_json(folder / "groups" / "should-not-trigger-02.json")
    assert quiet["input"] == {"prompt": "What is the capital of France?"}
    assert [e["expect"] for e in quiet["expectations"]] == ["never", "never"]
    assert len(_collected(tmp_path / "skills", folder / "suite.json")) == 4

    again = skill_eval("import", str(source))
    assert_one_line_error(again, f"{folder / 'suite.json'} exists; import never overwrites")
    assert again.returncode == 2


@pytest.mark.pi
def test_an_imported_trigger_set_replays_its_templates_on_pi_and_passes(tmp_path: Path) -> None:
    source = _triggers(tmp_path)
    done = skill_eval("import", str(source))
    run_line = done.stdout.splitlines()[-1]
    assert run_line.startswith(f"run it: cd {tmp_path / 'skills'} && pytest ")
    ran = _pytest(tmp_path / "skills", *run_line.split(" && pytest ", 1)[1].split())
    assert "4 passed" in ran.stdout
    assert "should-trigger-01: the skill changed 1 of 1 comparison for the better" in ran.stdout


JSON = "skills/changelog-keeper/evals"
CASES = "changelog-kit/evals"


@pytest.mark.parametrize(
    ("path", "content", "needle"),
    [
        (f"{JSON}/evals.json", "{not json", "not JSON (line 1, column 2"),
        (f"{JSON}/evals.json", '{"cases": []}', "neither an evals.json (an object with evals)"),
        (f"{JSON}/evals.json", '{"evals": [{"id": 1}]}', "evals[0] has no prompt"),
        (f"{JSON}/triggers.json", '[{"query": "x"}]', "query 1 needs a query string and"),
        (f"{JSON}/evals.json", '{"evals": [{"prompt": "p", "files": ["gone.md"]}]}', "gone.md"),
        (f"{CASES}/adds-entry/case.yaml", "graders: [\n", "not YAML (line 2)"),
        (f"{CASES}/prose/graders/criteria.md", "---\nweight: 1\n---\nok\n", "needs type:"),
        (f"{CASES}/prose/prompt.md", "---\n---\n\nTODO: describe it\n", "TODO template line"),
        (f"{CASES}/adds-entry/case.yaml", 'schema_version: "2.0"\n', "is not 1.x"),
        (f"{CASES}/adds-entry/case.yaml", "graders: {}\n", "graders must be a list"),
    ],
)
def test_an_unreadable_source_is_one_line_naming_its_file_and_writes_nothing(
    tmp_path: Path, path: str, content: str, needle: str
) -> None:
    plugin = _plugin(tmp_path)
    _skill(tmp_path)
    broken = write(tmp_path / path, content)
    done = skill_eval("import", str(plugin if path.startswith(CASES) else broken))
    assert_one_line_error(done, str(broken), needle)
    assert done.returncode == 2
    assert not (tmp_path / "skills" / "evals").exists()
    assert not (plugin / "skill-eval").exists()


def test_a_plugin_whose_graders_all_fail_to_map_writes_nothing(tmp_path: Path) -> None:
    plugin = _plugin(tmp_path)
    shutil.rmtree(plugin / "evals")
    case = "execution: {prompt: Go.}\ngraders: [{name: a, type: tool_used, tool: Skill, min: 2}]\n"
    write(plugin / "evals" / "counted" / "case.yaml", case)
    done = skill_eval("import", str(plugin))
    assert_one_line_error(done, f"{plugin}: no case, eval or query maps to a group")
    assert not (plugin / "skill-eval").exists()


def test_a_json_source_far_from_any_skill_asks_for_it(tmp_path: Path) -> None:
    source = write(tmp_path / "triggers.json", '[{"query": "x", "should_trigger": true}]')
    done = skill_eval("import", str(source))
    assert_one_line_error(done, f"{source}: no SKILL.md in its folder or above; pass --skill")


@pytest.mark.parametrize(
    ("grader", "check"),
    [
        ({"pattern": "docs/CHANGELOG"}, ("contains", "docs/CHANGELOG")),
        ({"pattern": "CHANGELOG.md"}, None),
        ({"pattern": "v1\\.2"}, ("contains", "v1.2")),
        ({"pattern": "^done$"}, ("equals", "done")),
        ({"pattern": "TODO", "match": "count:0"}, ("not-contains", "TODO")),
        ({"pattern": "TODO", "match": "not_contains", "flags": "g"}, ("not-contains", "TODO")),
        ({"pattern": "\\d+ tests"}, None),
        ({"pattern": "a|b"}, None),
        ({"pattern": "done", "flags": "i"}, None),
        ({"pattern": "done", "match": "count:2"}, None),
    ],
)
def test_a_regex_maps_to_a_text_check_only_when_it_is_a_literal(
    grader: dict[str, str], check: tuple[str, str] | None
) -> None:
    mapped, why = text_check(grader, "response-text")
    if check is None:
        assert mapped is None
        assert why
    else:
        assert mapped == {"kind": "response-text", "expect": check[0], "value": check[1]}
