"""`skill-eval lint PATH…`, a pre-commit hook: exit 0 clean, 1 findings, 2 usage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skill_eval.commands import cli
from tests.support.files import write
from tests.support.roots import body_group, make_root, variant

GOOD = "---\nname: good\ndescription: Does one thing. Use when asked to.\n---\n\nDo it.\n"


def test_a_clean_skill_exits_0_and_prints_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "good" / "SKILL.md", GOOD)

    assert cli.main(["lint", str(tmp_path / "good"), str(tmp_path / "good" / "SKILL.md")]) == 0
    assert capsys.readouterr() == ("", "")


def test_findings_exit_1_one_line_each_with_the_file_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "template-skill" / "SKILL.md", GOOD.replace("name: good", "name: template"))
    write(tmp_path / "long" / "SKILL.md", GOOD.replace("Does one thing.", "x" * 1100))

    code = cli.main(["lint", str(tmp_path / "template-skill"), str(tmp_path / "long")])

    out, err = capsys.readouterr()
    assert code == 1
    assert out.splitlines() == [
        f"{tmp_path / 'template-skill' / 'SKILL.md'}: `name` 'template' does not match its "
        "folder 'template-skill'; rename the folder or the skill so they match",
        f"{tmp_path / 'long' / 'SKILL.md'}: `description` is 1119 characters, over the "
        "specification's 1024; shorten it to 1024 or fewer",
        f"{tmp_path / 'long' / 'SKILL.md'}: `name` 'good' does not match its folder 'long'; "
        "rename the folder or the skill so they match",
        f"{tmp_path / 'long' / 'SKILL.md'}: on codex: its listing offers the model 1024 of the "
        "description's 1119 characters, ending 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; the "
        f"rest ('{'x' * 76} Use when asked to.') is cut; shorten the description to 1024 "
        "characters",
        f"{tmp_path / 'long' / 'SKILL.md'}: on copilot-cli: its description is 1119 characters, "
        "and it drops a skill whose description is over 1024: the model is never offered it; "
        "shorten the description to 1024",
    ]
    assert err == "skill-eval lint: 5 findings\n"


def test_host_limits_only_for_the_hosts_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "good" / "SKILL.md", GOOD.replace("Does one thing.", "x" * 1010))

    assert cli.main(["lint", "--host", "pi", "--host", "claude-code", str(tmp_path / "good")]) == 1
    assert "on codex" not in capsys.readouterr().out
    assert cli.main(["lint", "--host", "codex", str(tmp_path / "good")]) == 1
    assert "on codex: its listing offers the model 1024" in capsys.readouterr().out


def test_a_definition_is_linted_variant_by_variant_on_its_declared_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    candidate = variant(["skills/answer-writer", "vendor/answer-writer"], target=0)
    group = body_group("answer", variants={"baseline": variant(), "candidate": candidate})
    make_root(root, [group], {})
    write(root / "vendor" / "answer-writer" / "SKILL.md", GOOD.replace("good", "answer-writer"))

    code = cli.main(["--root", str(root), "lint", str(root / "suite.json")])

    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines() == [
        f"{root / 'groups' / 'answer.json'}: /variants/candidate/skills/1: skill name "
        "'answer-writer' is also the name of skills/answer-writer: a host refuses the second or "
        "silently drops one; give each skill of a variant its own name"
    ]
    assert json.loads((root / "suite.json").read_text())["kind"] == "suite"


@pytest.mark.parametrize("given", ["missing", "notes.txt"])
def test_a_path_that_is_no_skill_nor_definition_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    write(tmp_path / "notes.txt", "text\n")

    assert cli.main(["lint", str(tmp_path / given)]) == 2
    assert capsys.readouterr().err == (
        f"skill-eval lint: {tmp_path / given}: not a skill directory (with a SKILL.md), a "
        "SKILL.md or a definition file; pass one of those\n"
    )


def test_the_console_script_exits_2_for_an_unknown_host(tmp_path: Path) -> None:
    write(tmp_path / "good" / "SKILL.md", GOOD)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_skill_eval.commands.cli", "lint", "--host", "nope", "x"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "invalid choice: 'nope'" in done.stderr
