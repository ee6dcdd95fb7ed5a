"""The declared skills are linted at collection (and so by `--collect-only`): what no host can
run is a collection error naming the file, what a chosen host would refuse makes its items a
`cannot run on <host>` skip, and what a host would cut is a warning showing the cut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import write
from tests.support.git import run_git
from tests.support.roots import body_group, make_root, runtime, variant, write_answer
from tests.support.runs import skill_eval_args

DUPLICATE = "---\nname: answer-writer\ndescription: Writes answers too. Use for answers.\n---\n"


def _root(path: Path, skills: list[str], **overrides: Any) -> Path:
    candidate = variant(skills, target=0)
    group = body_group("answer", variants={"baseline": variant(), "candidate": candidate})
    group.update(overrides)
    scripts = {"answer/baseline": write_answer("no"), "answer/candidate": write_answer("yes")}
    return make_root(path, [group], scripts)


def _hosts(*names: str) -> list[str]:
    return [arg for name in names for arg in ("--skill-eval-host", name)]


def test_a_skill_md_without_front_matter_on_a_host_that_drops_it_is_a_collection_error(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root", ["skills/plain"])
    write(root / "skills" / "plain" / "SKILL.md", "# Plain\n\nNo front matter.\n")

    result = pytester.runpytest_inprocess(*skill_eval_args(root, "--collect-only", "-q"))

    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert (
        f"{root / 'groups' / 'answer.json'}: cannot run on pi: SKILL.md has no front matter (a "
        "first line ---): it does not list the skill, so the model is never offered it"
    ) in output
    assert "Traceback" not in output


def test_a_git_source_is_linted_as_committed_not_as_in_the_working_tree(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root", ["skills/answer-writer"])
    committed = root / "skills" / "answer-writer" / "SKILL.md"
    fixed = committed.read_text()
    write(committed, "# Answer writer\n\nNo front matter yet.\n")
    run_git(root, "init", "-q")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "before the front matter")
    write(committed, fixed)  # the working tree is right; the commit is not
    group = json.loads((root / "groups" / "answer.json").read_text())
    group["variants"]["baseline"] = {
        **variant(["skills/answer-writer"], target=0),
        "source": {"kind": "git", "ref": "HEAD"},
    }
    write(root / "groups" / "answer.json", json.dumps(group))

    result = pytester.runpytest_inprocess(*skill_eval_args(root, "--collect-only", "-q"))

    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert "/variants/baseline/skills/0: SKILL.md has no front matter" in output
    assert "/variants/candidate/skills/0" not in output


@pytest.mark.parametrize("hosts", [(), ("claude-code", "codex", "opencode", "pi")])
def test_two_skills_with_one_name_are_a_collection_error_before_any_host_starts(
    pytester: pytest.Pytester, tmp_path: Path, hosts: tuple[str, ...]
) -> None:
    """On Claude Code, Codex and opencode the run used to fail saying the subject's run could
    not be recorded; on Pi one skill was silently dropped and the group passed."""
    root = _root(tmp_path / "root", ["skills/answer-writer", "vendor/answer-writer"])
    write(root / "vendor" / "answer-writer" / "SKILL.md", DUPLICATE)

    result = pytester.runpytest_inprocess(*skill_eval_args(root, *_hosts(*hosts)))

    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert (
        "/variants/candidate/skills/1: skill name 'answer-writer' is also the name of "
        "skills/answer-writer: a host refuses the second or silently drops one; give each skill "
        "of a variant its own name"
    ) in output
    assert "could not be recorded" not in output
    assert not (root / ".skill-eval").exists()  # nothing ran


def test_a_name_one_chosen_host_reserves_skips_the_group_there_with_reason_and_fix(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root", ["skills/.system"])
    write(root / "skills" / ".system" / "SKILL.md", DUPLICATE.replace("answer-writer", ".system"))

    result = pytester.runpytest_inprocess(*skill_eval_args(root, *_hosts("codex"), "-rs"))

    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, output
    result.assert_outcomes(skipped=2)
    assert (
        "cannot run on codex: it cannot install a skill named '.system': Codex keeps its bundled "
        "system skills under that name (skills/.system); rename the skill, or run it on another "
        "host"
    ) in output
    # On record as the host's cannot-run fact, as a host that cannot run a group is, and shown.
    (invocation,) = (root / ".skill-eval" / "runs").glob("*/invocation.json")
    (fact,) = json.loads(invocation.read_text())["cannotRun"]
    assert (fact["group"], fact["host"]) == ("answer", "codex")
    assert fact["reason"].startswith("it cannot install a skill named '.system'")
    assert f"group answer@codex [skipped] cannot run: {fact['reason']}" in output


def test_a_name_the_declared_host_reserves_is_a_collection_error(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root", ["skills/.system"], runtime=runtime(host="codex"))
    write(root / "skills" / ".system" / "SKILL.md", DUPLICATE.replace("answer-writer", ".system"))

    result = pytester.runpytest_inprocess(*skill_eval_args(root, "--collect-only", "-q"))

    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert f"{root / 'groups' / 'answer.json'}: cannot run on codex: it cannot install" in output


def test_collect_only_warns_of_a_description_a_host_cuts_and_shows_the_cut(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root", ["skills/long"])
    description = "Writes the answer. " * 55 + "Always reply done."
    write(
        root / "skills" / "long" / "SKILL.md", f"---\nname: long\ndescription: {description}\n---\n"
    )

    result = pytester.runpytest_inprocess(
        *skill_eval_args(root, "--collect-only", "-q", *_hosts("pi", "codex"))
    )

    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert "SkillLintWarning" in output
    assert "/variants/candidate/skills/0: on codex: its listing offers the model 1024 of" in output
    assert "Always reply done.') is cut; shorten the description to 1024 characters" in output
    assert "`description` is 1063 characters, over the specification's 1024" in output


def test_collect_only_does_not_warn_that_the_documented_skill_call_will_fail(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root", ["skills/answer-writer"])
    activate = {
        "response": {"tool_calls": [{"name": "skill", "arguments": {"name": "answer-writer"}}]}
    }
    write(
        root / "scripts" / "answer" / "candidate.yaml",
        "version: 1\ninteractions:\n"
        + "".join(f"  - {item}\n" for item in [activate, *write_answer("yes")]).replace("'", '"'),
    )

    result = pytester.runpytest_inprocess(*skill_eval_args(root, "--collect-only", "-q"))

    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert "will fail" not in output
    assert "UndeclaredToolWarning" not in output
