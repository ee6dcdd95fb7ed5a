"""`skill-eval review` end to end: a real result, real Pi as the reviewer, a scripted model."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_skill_eval.commands import cli
from pytest_skill_eval.commands import review as review_module
from pytest_skill_eval.commands.review import ReviewSettings, review_target
from pytest_skill_eval.errors import DiskFullError
from pytest_skill_eval.hosts import binaries
from pytest_skill_eval.hosts.pi import host as pi_host
from pytest_skill_eval.hosts.pi.binary import check_pi
from pytest_skill_eval.hosts.pi.driver import Conversation
from pytest_skill_eval.views import render_text
from tests.support.files import read_json, write
from tests.support.paths import PI, REPO
from tests.support.processes import dead
from tests.support.shared import SharedRun

pytestmark = pytest.mark.pi

BASELINE_REPLY = "I added a line about semicolons to CHANGELOG.md."
CANDIDATE_REPLY = "- Handle semicolons in CSV export (#42)"
ANSWER = {"question": 1, "A": "yes", "B": "no", "rationale": "A put the entry under Fixed."}


@pytest.fixture(scope="module")
def built(example_run: SharedRun) -> Path:
    """The example suite's shared run: real Pi 0.73.1, scripted subjects."""
    return example_run.root


@pytest.fixture
def root(built: Path, tmp_path: Path) -> Path:
    """A private copy of the built definition root and its result."""
    copy = tmp_path / "example"
    shutil.copytree(built, copy, symlinks=True)
    return copy


@pytest.fixture
def result(root: Path) -> Path:
    """The one result directory of the private copy."""
    (only,) = (root / ".skill-eval" / "runs").iterdir()
    return only


def _script(root: Path, group: str, *replies: str, name: str = "review.yaml") -> Path:
    """Write a reviewer script answering with `replies`, one per model request."""
    directory = root / "review-scripts"
    interactions = [
        {"response": {"text": r, "usage": {"input": 800, "output": 40}}} for r in replies
    ]
    path = directory / group / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"version": 1, "interactions": interactions}), "utf-8")
    return directory


def _review(root: Path, target: Path, *extra: str) -> int:
    scripts = root / "review-scripts"
    argv = ["--root", str(root), "review", str(target), "--model", "acme/reviewer"]
    return cli.main([*argv, "--cassettes", str(scripts), "--pi", str(PI), *extra])


def _canonical(result: Path) -> dict[str, str]:
    """sha256 of every file of the result except the advisory review."""
    found = {}
    for path in sorted(result.rglob("*")):
        rel = path.relative_to(result).as_posix()
        advisory = rel.split("/")[2:3] in (["review"], ["semantic-grade.json"])
        if path.is_file() and not path.is_symlink() and not advisory:
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _advisory(group_dir: Path) -> dict[str, bytes]:
    files = {"semantic-grade.json": (group_dir / "semantic-grade.json").read_bytes()}
    for path in sorted((group_dir / "review").iterdir()):
        files[f"review/{path.name}"] = path.read_bytes()
    return files


def _leftovers(group_dir: Path) -> list[str]:
    return sorted(
        p.name for p in group_dir.iterdir() if p.name.startswith((".semantic", "review."))
    )


def _run_section(prompt: str, label: str) -> str:
    start = prompt.index(f"## Run {label}\n")
    end = prompt.find("\n## Run ", start + 1)
    return prompt[start : end if end >= 0 else prompt.index("\nReply with only JSON")]


@pytest.mark.parametrize(("bit", "a_variant"), [(0, "baseline"), (1, "candidate")])
def test_review_maps_labels_back_to_variants_and_leaves_evidence_alone(
    root: Path,
    result: Path,
    bit: int,
    a_variant: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(review_module, "label_bit", lambda: bit)
    reply = "```json\n" + json.dumps({"answers": [ANSWER]}) + "\n```"
    _script(root, "changelog-entry", reply)
    before = _canonical(result)

    assert _review(root, result, "--group", "changelog-entry") == 0
    assert capsys.readouterr().out.splitlines() == [
        "Review changelog-entry: complete (semantic-grade.json)"
    ]

    group_dir = result / "groups" / "changelog-entry"
    grade = read_json(group_dir / "semantic-grade.json")
    b_variant = "candidate" if a_variant == "baseline" else "baseline"
    assert grade["labels"] == {"A": a_variant, "B": b_variant}
    assert grade["answers"] == [
        {
            "question": "Did the entry land in the right section?",
            a_variant: "yes",
            b_variant: "no",
            "rationale": "A put the entry under Fixed.",
        }
    ]
    assert (grade["state"], grade["errors"], grade["advisory"]) == ("complete", [], True)
    assert (grade["model"], grade["thinking"]) == ("acme/reviewer", None)
    assert grade["provider"]["mode"] == "scripted"
    assert grade["usage"]["input"] == 800
    prompt_bytes = (group_dir / "review" / "prompt.md").read_bytes()
    assert grade["prompt"] == {
        "file": "review/prompt.md",
        "sha256": hashlib.sha256(prompt_bytes).hexdigest(),
    }
    assert (group_dir / "review" / "final.md").read_text("utf-8") == reply + "\n"

    # The prompt shows run A's evidence under A, and nothing that names or grades a variant.
    prompt = prompt_bytes.decode("utf-8")
    replies = {"baseline": BASELINE_REPLY, "candidate": CANDIDATE_REPLY}
    assert replies[a_variant] in _run_section(prompt, "A")
    assert replies[b_variant] in _run_section(prompt, "B")
    assert "Files modified: CHANGELOG.md" in _run_section(prompt, "B")
    for hidden in ("baseline", "candidate", "entry-in-fixed", "pass", str(result)):
        assert hidden not in prompt

    # Pi got exactly that prompt (as the last argv item) and its events were kept.
    events = [json.loads(line) for line in (group_dir / "review" / "events.jsonl").open()]
    users = [e for e in events if e.get("type") == "message_end" and e["message"]["role"] == "user"]
    assert [u["message"]["content"][0]["text"] for u in users] == [prompt]

    assert _canonical(result) == before
    assert cli.main(["verify", str(result)]) == 0
    assert "verified:" in capsys.readouterr().out
    verdicts = {a_variant: "yes", b_variant: "no"}
    row = f"review\tQ1\tbaseline={verdicts['baseline']}\tcandidate={verdicts['candidate']}\t"
    assert row + "A put the entry under Fixed.\n" in render_text(result, group="changelog-entry")


def test_malformed_reply_is_a_review_error_with_the_raw_response(
    root: Path, result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = "Both runs look fine to me!"
    _script(root, "natural-activation", raw)
    _script(root, "changelog-entry", json.dumps({"answers": [ANSWER, ANSWER]}))

    assert _review(root, result) == 1
    assert capsys.readouterr().out.splitlines() == [
        "Review natural-activation: review-error (semantic-grade.json)",
        "Review changelog-entry: review-error (semantic-grade.json)",
    ]
    activation = result / "groups" / "natural-activation"
    grade = read_json(activation / "semantic-grade.json")
    assert (grade["state"], grade["answers"]) == ("review-error", [])
    assert grade["errors"] == ["reviewer response is not JSON"]
    assert (activation / "review" / "final.md").read_text("utf-8") == raw + "\n"
    assert raw in (activation / "review" / "events.jsonl").read_text("utf-8")
    # The description group's skill path names the variant; the reviewer never sees it.
    prompt = (activation / "review" / "prompt.md").read_text("utf-8")
    assert "{{run}}/resources/skills/0/changelog-keeper/SKILL.md" in prompt
    assert "candidate" not in prompt
    entry = read_json(result / "groups" / "changelog-entry" / "semantic-grade.json")
    assert entry["errors"] == ["reviewer must answer exactly 1 question"]
    assert cli.main(["verify", str(result)]) == 0


def test_reviewer_that_does_not_complete_is_a_review_error(
    root: Path, result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripts = root / "review-scripts" / "changelog-entry"
    scripts.mkdir(parents=True)
    (scripts / "review.yaml").write_text(
        "version: 1\ninteractions:\n"
        "  - response:\n      error: {status: 529, message: overloaded}\n",
        encoding="utf-8",
    )
    assert _review(root, result, "--group", "2", "--thinking", "low") == 1
    grade = read_json(result / "groups" / "changelog-entry" / "semantic-grade.json")
    assert grade["state"] == "review-error"
    assert grade["thinking"] == "low"
    assert len(grade["errors"]) == 1
    assert grade["errors"][0].startswith("reviewer did not complete: ")
    assert "overloaded" in grade["errors"][0]
    assert (
        capsys.readouterr().out.strip()
        == "Review changelog-entry: review-error (semantic-grade.json)"
    )


def test_previous_review_is_kept_until_a_new_one_is_complete(
    root: Path, result: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _script(root, "changelog-entry", json.dumps({"answers": [ANSWER]}))
    assert _review(root, result, "--group", "changelog-entry") == 0
    group_dir = result / "groups" / "changelog-entry"
    previous = _advisory(group_dir)

    # Interrupted while the reviewer runs: Pi is stopped and nothing is swapped in.
    pids: list[int] = []

    def interrupted(conversation: Conversation, prompt: str) -> Any:
        pids.append(conversation.process.pid)
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(pi_host, "run_one_shot", interrupted)
        assert _review(root, result, "--group", "changelog-entry") == 130
    assert "earlier reviews are kept" in capsys.readouterr().err
    assert _advisory(group_dir) == previous
    assert _leftovers(group_dir) == []
    assert len(pids) == 1
    assert dead(pids[0])

    # Failing at the last step of the swap puts the previous review back.
    real_replace = os.replace

    def failing_replace(src: Any, dst: Any) -> None:
        if str(dst).endswith("semantic-grade.json"):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    settings = ReviewSettings(
        pi=check_pi(PI), model="acme/reviewer", cassettes=root / "review-scripts"
    )
    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", failing_replace)
        # A full disk is one clear error (the CLI prints it as one line), never a traceback.
        with pytest.raises(DiskFullError, match="No space left"):
            review_target(result, settings, group="changelog-entry", emit=lambda _: None)
    assert _advisory(group_dir) == previous
    assert _leftovers(group_dir) == []

    # A finished review (even a review-error) replaces the previous one completely.
    _script(root, "changelog-entry", "no json here")
    assert _review(root, result, "--group", "changelog-entry") == 1
    replaced = _advisory(group_dir)
    assert replaced["review/final.md"] == b"no json here\n"
    assert read_json(group_dir / "semantic-grade.json")["state"] == "review-error"
    assert sorted(replaced) == sorted(previous)
    assert _leftovers(group_dir) == []
    assert cli.main(["verify", str(result)]) == 0


def test_aggregate_reviews_each_trial(
    root: Path, result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = result.parent
    trials = []
    for number in (1, 2):
        trial = runs / f"20300101000000-0000000{number}"
        shutil.copytree(result, trial, symlinks=True)
        summary = read_json(trial / "summary.json")
        summary["trial"] = number
        (trial / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
        trials.append(trial)
    aggregate = runs / "20300101000001-000000aa"
    aggregate.mkdir()
    (aggregate / "aggregate.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "kind": "aggregate",
                "trials": [{"id": t.name, "state": "complete"} for t in trials],
            }
        ),
        encoding="utf-8",
    )
    second = dict(ANSWER, rationale="trial two")
    _script(root, "changelog-entry", json.dumps({"answers": [ANSWER]}))
    _script(root, "changelog-entry", json.dumps({"answers": [second]}), name="review-trial2.yaml")

    assert _review(root, aggregate, "--group", "changelog-entry") == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Trial {trials[0].name}",
        "Review changelog-entry: complete (semantic-grade.json)",
        f"Trial {trials[1].name}",
        "Review changelog-entry: complete (semantic-grade.json)",
    ]
    grades = [read_json(t / "groups" / "changelog-entry" / "semantic-grade.json") for t in trials]
    rationales = [grade["answers"][0]["rationale"] for grade in grades]
    assert rationales == ["A put the entry under Fixed.", "trial two"]
    assert not (result / "groups" / "changelog-entry" / "review").exists()


def test_groups_that_cannot_be_reviewed_are_skipped_with_the_reason(
    root: Path, result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
        data = read_json(path)
        change(data)
        path.write_text(json.dumps(data), encoding="utf-8")

    groups = result / "groups"
    edit(groups / "natural-activation" / "definition.json", lambda d: d.update(review_questions=[]))
    edit(
        groups / "changelog-entry" / "baseline" / "run.json", lambda d: d.update(state="cancelled")
    )
    (root / "review-scripts").mkdir()

    assert _review(root, result) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Review natural-activation: skipped (no review questions)",
        "Review changelog-entry: skipped (baseline run is cancelled)",
    ]
    assert not list(groups.glob("*/review*"))
    assert not list(groups.glob("*/semantic-grade.json"))


def test_a_missing_reviewer_script_stops_before_any_review(
    root: Path, result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _script(root, "natural-activation", json.dumps({"answers": [ANSWER]}))
    assert _review(root, result) == 1
    captured = capsys.readouterr()
    expected = root / "review-scripts" / "changelog-entry" / "review.yaml"
    assert captured.err.strip() == (
        f"skill-eval: no reviewer script for group 'changelog-entry': expected {expected} "
        "(write one, or review live without --cassettes)"
    )
    assert captured.out == ""
    assert not list((result / "groups").glob("*/review*"))


def test_without_pi_the_reviewer_is_found_in_the_project_as_a_run_finds_it(
    root: Path,
    result: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The project holds the definition root, its ini file and the npm packages; nothing beside
    # the installed package and nothing on PATH.
    write(tmp_path / "pyproject.toml", "[tool.pytest.ini_options]\n")
    (tmp_path / "node_modules").symlink_to(REPO / "node_modules")
    monkeypatch.setattr(binaries, "PACKAGE_ROOT", tmp_path / "site-packages")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    (root / "review-scripts").mkdir()
    argv = ["--root", str(root), "review", str(result), "--model", "acme/reviewer"]
    assert cli.main([*argv, "--cassettes", str(root / "review-scripts")]) == 1
    # Pi was found and checked: what stops the review is the reviewer script it lacks.
    assert "skill-eval: no reviewer script for group" in capsys.readouterr().err
