"""Skills written the way public skill collections write them, offline on every registered host:
what each host really offers the model, and what the evidence says when the target was not
offered intact, when a script reads a skill no host listed, and when the wrong skill is read.

The suite (`data/real_skills`): a document skill with scripts and references, an API guide whose
description is 1,068 characters with an 84 KB reference, a "Use when" skill with extra front
matter, a Japanese-language skill, a template with a folded description holding `&`, `<`, `>`
and quotes, and a `SKILL.md` without front matter. One nested run is shared by every test here.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pytest_skill_eval.commands import cli
from pytest_skill_eval.hosts.registry import names
from tests.support import runs
from tests.support.files import read_json
from tests.support.shared import SharedRun, shared_run, shared_setup

pytestmark = [pytest.mark.pi, pytest.mark.claude, pytest.mark.codex, pytest.mark.gemini]

SUITE = Path(__file__).parent / "data" / "real_skills"
HOSTS = names()
EVERYWHERE = ("pdf-tools", "systematic-debugging", "nihongo-review")
# What each pinned host offers of `every-skill`'s five skills, as observed on the wire.
WHOLE = dict.fromkeys(EVERYWHERE, "intact")
OFFERED: dict[str, dict[str, str]] = {
    # Pi lists every description whole and escapes it as XML.
    "pi": {**WHOLE, "api-guide": "intact", "template-skill": "intact"},
    # Claude Code escapes `<` and `>` (not `&`).
    "claude-code": {
        **WHOLE,
        "api-guide": "intact",
        "template-skill": "altered",
    },
    # Codex cuts a description at 1,024 characters (`...` included).
    "codex": {**WHOLE, "api-guide": "cut", "template-skill": "intact"},
    "gemini-cli": {
        **WHOLE,
        "api-guide": "intact",
        "template-skill": "intact",
    },
    "opencode": {
        **WHOLE,
        "api-guide": "intact",
        "template-skill": "intact",
    },
}
# Hosts that drop a skill whose description is over 1,024 characters (`api-guide`'s is 1,068):
# the linter refuses every group declaring it there before spend.
DROPS_LONG = ("copilot-cli",)
# What each host makes of `long-description`'s 1,068-character description, where it is not
# offered whole: the check's state and the target's offered state.
LONG_DESCRIPTION = {"codex": ("fail", "cut")}


def _copy_suite(root: Path) -> Path:
    shutil.copytree(SUITE, root)
    return root


@pytest.fixture(scope="module")
@shared_setup
def real_skills(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The real-skills suite run once on every registered host (read only)."""
    hosts = [arg for host in HOSTS for arg in ("--skill-eval-host", host)]
    return shared_run(tmp_path_factory, "real-skills", _copy_suite, *hosts)


def _group(run: SharedRun, group_id: str, host: str) -> Path:
    (result_dir,) = runs.results(run.root)
    return result_dir / "groups" / (group_id if host == "pi" else f"{group_id}@{host}")


def _offered(run: SharedRun, group_id: str, host: str) -> dict[str, Any]:
    record: dict[str, Any] = read_json(
        _group(run, group_id, host) / "candidate" / "offered-skills.json"
    )
    return record


def _skips(junit: Path) -> list[tuple[str, str]]:
    """(test name, skip message) of each skipped case of a JUnit file."""
    cases = ElementTree.parse(junit).getroot().iter("testcase")
    return [
        (case.get("name", ""), skip.get("message", ""))
        for case in cases
        for skip in case.iter("skipped")
    ]


def _activation(run: SharedRun, group_id: str, host: str) -> dict[str, Any]:
    record: dict[str, Any] = read_json(_group(run, group_id, host) / "candidate" / "run.json")
    activation: dict[str, Any] = record["activation"]
    return activation


def test_every_host_runs_every_real_skill_without_an_infrastructure_failure(
    real_skills: SharedRun,
) -> None:
    for host in HOSTS:
        long = () if host in DROPS_LONG else ("every-skill", "long-description")
        groups = ("wrong-skill", *long)
        for group_id in groups + (("no-front-matter",) if host == "claude-code" else ()):
            record = read_json(_group(real_skills, group_id, host) / "group.json")
            assert record["state"] == "complete", (host, group_id)
            assert set(record["variants"].values()) == {"complete"}, (host, group_id)


def test_each_host_offers_the_real_skills_as_it_really_behaves(real_skills: SharedRun) -> None:
    assert set(OFFERED) == set(HOSTS) - set(DROPS_LONG)
    for host in OFFERED:
        record = _offered(real_skills, "every-skill", host)
        assert record["host"] == host
        assert record["request"] == 0
        assert record["others"] == []  # no bundled skill reached the model
        states = {skill["name"]: skill["state"] for skill in record["skills"]}
        assert states == OFFERED[host], host
        japanese = next(s for s in record["skills"] if s["name"] == "nihongo-review")
        assert japanese["description"].startswith("日本語の技術文書をレビューし"), host


def test_claude_code_escapes_angle_brackets_of_a_description(real_skills: SharedRun) -> None:
    record = _offered(real_skills, "every-skill", "claude-code")
    (template,) = [s for s in record["skills"] if s["name"] == "template-skill"]
    assert "& keep &lt;config&gt; files" in template["description"]
    assert (template["offeredChars"], template["declaredChars"]) == (185, 179)


def test_a_skill_without_front_matter_is_refused_before_spend_where_a_host_drops_it(
    real_skills: SharedRun,
) -> None:
    """Pi, Codex, Gemini CLI and opencode never list a SKILL.md without front matter, so a
    script reading it by path would score "better" with a skill no model could choose: the
    linter makes the group a `cannot run` skip there. Claude Code lists it with a description
    of its own: it runs, and the bottom line says the target was not offered intact."""
    better = "the skill changed 1 of 1 comparison for the better (fail-to-pass), none for the worse"
    lines = real_skills.stdout.splitlines()
    for host in HOSTS:
        if host == "claude-code":
            continue
        assert not _group(real_skills, "no-front-matter", host).exists(), host
    skipped = _skips(real_skills.junit)
    for host in HOSTS:
        if host == "claude-code":
            continue
        reasons = [
            reason
            for name, reason in skipped
            if name.startswith("no-front-matter")
            and (f"@{host}" in name if host != "pi" else "@" not in name)
        ]
        assert reasons, (host, skipped)
        for reason in reasons:
            assert f"cannot run on {host}: SKILL.md has no front matter" in reason, reason
            assert "the model is never offered it" in reason, reason
    activation = _activation(real_skills, "no-front-matter", "claude-code")
    assert activation["state"] == "read"
    assert activation["target"] == {"index": 0, "name": "meeting-notes"}
    # Claude Code lists it under its folder, its first heading as the description.
    assert activation["offered"] == "altered"
    assert activation["unrealistic"] is None
    (bottom,) = [line for line in lines if line.startswith("no-front-matter@claude-code: ")]
    assert better in bottom
    assert bottom.endswith(
        "but the host did not offer the candidate's target meeting-notes intact "
        "(altered: 13 characters sent, none declared)"
    )


def test_codex_cuts_a_1068_character_description_at_1024(real_skills: SharedRun) -> None:
    skill = _offered(real_skills, "long-description", "codex")["skills"][0]
    assert (skill["state"], skill["offeredChars"], skill["declaredChars"]) == ("cut", 1024, 1068)
    assert skill["description"].endswith("...")
    assert "    candidate target api-guide: cut 1024 of 1068" in real_skills.stdout.splitlines()
    for host in set(HOSTS) - set(DROPS_LONG):
        grade = read_json(
            _group(real_skills, "long-description", host) / "deterministic-grade.json"
        )
        (check,) = grade["checks"]
        state, offered = LONG_DESCRIPTION.get(host, ("pass", "intact"))
        assert check["state"] == state, host
        assert check["observed"]["offered"] == offered, host


def test_a_host_that_drops_a_long_description_skips_its_groups_before_spend(
    real_skills: SharedRun,
) -> None:
    skipped = _skips(real_skills.junit)
    for host in DROPS_LONG:
        for group_id in ("every-skill", "long-description"):
            assert not _group(real_skills, group_id, host).exists(), (host, group_id)
            reasons = [r for n, r in skipped if n.startswith(group_id) and f"@{host}" in n]
            assert reasons, (host, group_id, skipped)
            assert all(
                f"cannot run on {host}: its description is 1068 characters, and it drops a "
                "skill whose description is over 1024" in reason
                for reason in reasons
            ), reasons


def test_reading_the_wrong_skill_names_it(real_skills: SharedRun) -> None:
    lines = real_skills.stdout.splitlines()
    assert lines.count("    candidate read another skill: systematic-debugging") == len(HOSTS)
    for host in HOSTS:
        activation = _activation(real_skills, "wrong-skill", host)
        assert activation["state"] == "read-another-skill"
        assert activation["otherSkillsRead"] == [{"index": 1, "name": "systematic-debugging"}]


def test_the_html_run_page_lists_the_offered_skills(real_skills: SharedRun, tmp_path: Path) -> None:
    (result_dir,) = runs.results(real_skills.root)
    report = tmp_path / "report.html"
    assert cli.main(["report", str(result_dir), "--html", str(report)]) == 0
    page = report.read_text(encoding="utf-8")
    assert "<h4>Offered skills (5)</h4>" in page
    assert "<td>cut 1024 of 1068</td>" in page
    assert "<dd>read another skill</dd>" in page


def test_the_markdown_summary_says_the_target_was_not_offered(
    real_skills: SharedRun, capsys: pytest.CaptureFixture[str]
) -> None:
    (result_dir,) = runs.results(real_skills.root)
    assert cli.main(["summary", "--markdown", str(result_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    (bullet,) = [
        line
        for line in lines
        if line.startswith("- **no-front-matter\\@\u2060claude-code**: ")
        and "did not offer" in line
    ]
    assert bullet.endswith(
        "but the host did not offer the candidate's target meeting-notes intact "
        "(altered: 13 characters sent, none declared)"
    )
    row = "| long-description | offered candidate-target api-guide |"
    (offered,) = [line for line in lines if line.startswith(row)]
    assert "| cut 1024 of 1068 |" in offered
    assert offered.endswith("| differs |")
