"""The review's pure parts on fixed evidence: labels, prompt, truncation, reply parsing, verify."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.commands import cli
from pytest_skill_eval.commands.review import recover, skip_reason
from pytest_skill_eval.commands.review_prompt import (
    assign_labels,
    compose_prompt,
    label_bit,
    map_answers,
    parse_reply,
    strip_fences,
    truncate,
)
from pytest_skill_eval.evidence.shard_seal import verify
from pytest_skill_eval.views.text import GroupEvidence, load_group, load_summary
from tests.support.files import stand_in_pi


def _group(result_dir: Path, group_id: str) -> GroupEvidence:
    summary = load_summary(result_dir)
    (record,) = [g for g in summary["groups"] if g["id"] == group_id]
    return load_group(result_dir, record)


def _answer(number: Any, a: Any = "yes", b: Any = "no", rationale: Any = "r") -> dict[str, Any]:
    return {"question": number, "A": a, "B": b, "rationale": rationale}


def test_label_bit_is_random_and_both_mappings_are_used() -> None:
    assert {label_bit() for _ in range(64)} == {0, 1}
    assert assign_labels(0) == {"A": "baseline", "B": "candidate"}
    assert assign_labels(1) == {"A": "candidate", "B": "baseline"}


def test_truncate_counts_utf16_units_and_never_splits_a_character() -> None:
    assert truncate("x" * 8000, 8000) == "x" * 8000
    assert truncate("x" * 8001, 8000) == "x" * 8000 + "… [truncated 1 characters]"
    # The emoji is two UTF-16 units: it does not fit after 7999 units, so it is cut whole.
    assert truncate("a" * 7999 + "😀b", 8000) == "a" * 7999 + "… [truncated 3 characters]"
    assert truncate("😀" * 4000, 8000) == "😀" * 4000


@pytest.mark.parametrize(
    "text",
    [
        '{"answers":[]}',
        '```json\n{"answers":[]}\n```',
        '  ```\n{"answers":[]}\n```  \n',
        '```JSON {"answers":[]}```',
        '{"answers":[]}\n```',
    ],
)
def test_one_leading_and_one_trailing_fence_are_stripped(text: str) -> None:
    assert strip_fences(text) == '{"answers":[]}'


def test_parse_reply_accepts_exact_answers_in_any_order() -> None:
    reply = json.dumps({"answers": [_answer(2, "no", "unclear"), _answer(1)]})
    answers, errors = parse_reply(f"```json\n{reply}\n```", 2)
    assert errors == []
    assert [a["question"] for a in answers] == [1, 2]
    assert answers[1]["B"] == "unclear"


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("Looks good", "reviewer response is not JSON"),
        ("```json\nnot json\n```", "reviewer response is not JSON"),
        ('["answers"]', "reviewer must answer exactly 2 questions"),
        (json.dumps({"answers": [_answer(1)]}), "reviewer must answer exactly 2 questions"),
        (
            json.dumps({"answers": [_answer(1), _answer(1)]}),
            "reviewer answer for question 2 is missing or invalid",
        ),
        (
            json.dumps({"answers": [_answer(1), _answer(2, b="maybe")]}),
            "reviewer answer for question 2 is missing or invalid",
        ),
        (
            json.dumps({"answers": [_answer(1, rationale=None), _answer(2)]}),
            "reviewer answer for question 1 is missing or invalid",
        ),
        (
            json.dumps({"answers": [_answer(True), _answer(2)]}),
            "reviewer answer for question 1 is missing or invalid",
        ),
    ],
)
def test_parse_reply_rejects_anything_else_and_keeps_no_answers(reply: str, error: str) -> None:
    assert parse_reply(reply, 2) == ([], [error])


def test_answers_map_back_through_either_labelling() -> None:
    answers = [_answer(1, "yes", "no", "A is better")]
    for bit, (baseline, candidate) in ((0, ("yes", "no")), (1, ("no", "yes"))):
        mapped = map_answers(answers, ["Q?"], assign_labels(bit))
        assert mapped == [
            {
                "question": "Q?",
                "baseline": baseline,
                "candidate": candidate,
                "rationale": "A is better",
            }
        ]


def test_prompt_shows_runs_by_label_without_variants_grades_or_read_paths(
    result_dir: Path,
) -> None:
    group = _group(result_dir, "changelog-entry")
    prompt = compose_prompt(group, assign_labels(1))
    lines = prompt.split("\n")
    assert lines[:2] == [
        "You are reviewing two anonymous runs, A and B, of the same task.",
        "Judge only the evidence below, and answer every question for both runs with yes, no "
        "or unclear.",
    ]
    assert lines[2:9] == [
        "",
        "Task turns:",
        "1. Note in the changelog that CSV export now handles semicolons (issue #42).",
        "",
        "Questions:",
        "1. Did the entry land in the right section?",
        "",
    ]
    run_a = prompt[prompt.index("## Run A") : prompt.index("## Run B")]
    run_b = prompt[prompt.index("## Run B") :]
    # Candidate is A here: its failed read and its single modified file.
    assert '- tool read failed: {"path":"RELEASE-NOTES.md"}' in run_a
    assert "Files created: none\nFiles modified: CHANGELOG.md\nFiles deleted: none" in run_a
    # Baseline is B: responses and file names are shown raw (the prompt is not a TAB table).
    assert '<script>alert("response")</script>' in run_b
    assert "Files created: draft\\v2\r\n.txt, notes\t<script>.md" in run_b
    assert '- tool write succeeded: {"path":"logo.png","content":"not a png any more\\n"}' in run_b
    for hidden in ("baseline", "candidate", "candidate-entry", "fail-to-pass", str(result_dir)):
        assert hidden not in prompt
    assert lines[-1].startswith('Reply with only JSON of the form {"answers":[{"question":1,')


def test_prompt_truncates_responses_and_tool_arguments(result_dir: Path) -> None:
    group = _group(result_dir, "changelog-entry")
    run = json.loads(json.dumps(group.runs["baseline"]))
    turn = run["turns"][0]
    turn["response"] = "r" * 9000
    turn["toolActivity"] = [
        {"toolName": "write", "args": {"content": "c" * 400}, "completed": False, "isError": None}
    ]
    changed = replace(group, runs={**group.runs, "baseline": run})
    prompt = compose_prompt(changed, assign_labels(0))
    assert "Turn 1 response:\n" + "r" * 8000 + "… [truncated 1000 characters]\n" in prompt
    args = json.dumps({"content": "c" * 400}, separators=(",", ":"))
    assert f"- tool write incomplete: {args[:300]}… [truncated {len(args) - 300} characters]" in (
        prompt
    )


def test_runs_without_turns_are_one_turn(result_dir: Path) -> None:
    group = _group(result_dir, "natural-activation")
    runs = {}
    for variant in ("baseline", "candidate"):
        run = dict(group.runs[variant] or {})
        run.pop("turns", None)
        run["response"] = f"flat {variant[:1]}"
        run["toolActivity"] = [{"toolName": "read", "args": {}, "completed": True}]
        runs[variant] = run
    prompt = compose_prompt(replace(group, runs=runs), assign_labels(0))
    assert "## Run A\nTurn 1 response:\nflat b\n- tool read succeeded: {}\n" in prompt


def test_skip_reasons(result_dir: Path) -> None:
    group = _group(result_dir, "changelog-entry")
    assert skip_reason(group) is None
    no_questions = replace(group, definition={**group.definition, "review_questions": []})
    assert skip_reason(no_questions) == "no review questions"
    cancelled = dict(group.runs["candidate"] or {}, state="cancelled")
    assert skip_reason(replace(group, runs={**group.runs, "candidate": cancelled})) == (
        "candidate run is cancelled"
    )
    assert skip_reason(replace(group, runs={**group.runs, "baseline": None})) == (
        "baseline run is missing"
    )


def test_verify_ignores_exactly_the_advisory_review(result_dir: Path) -> None:
    group_dir = result_dir / "groups" / "changelog-entry"
    (group_dir / "review").mkdir()
    (group_dir / "review" / "final.md").write_text("advisory\n", encoding="utf-8")
    (group_dir / "semantic-grade.json").write_text("{}\n", encoding="utf-8")
    assert verify(result_dir) == []
    (group_dir / "review.txt").write_text("not advisory\n", encoding="utf-8")
    (group_dir / "reviewer").mkdir()
    (group_dir / "reviewer" / "x").write_text("x", encoding="utf-8")
    assert sorted(verify(result_dir)) == [
        f"extra: {group_dir / 'review.txt'}",
        f"extra: {group_dir / 'reviewer'}/ (a directory)",
        f"extra: {group_dir / 'reviewer' / 'x'}",
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--model", "no-provider"],
            "skill-eval: --model: model 'no-provider' must be written provider/model, "
            "e.g. anthropic/claude-sonnet-4-5",
        ),
        (
            ["--model", "acme/live", "--inherit", "SKILL_EVAL_TEST_UNSET_KEY"],
            "skill-eval: --inherit SKILL_EVAL_TEST_UNSET_KEY: SKILL_EVAL_TEST_UNSET_KEY is not "
            "set in this environment; export it first",
        ),
    ],
)
def test_review_usage_errors_are_one_clear_line(
    result_dir: Path,
    tmp_path: Path,
    extra: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("SKILL_EVAL_TEST_UNSET_KEY", raising=False)
    pi = stand_in_pi(tmp_path / "pi", body="exit 99\n")  # the usage error comes first
    assert cli.main(["review", str(result_dir), "--pi", str(pi), *extra]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == message
    assert captured.out == ""
    assert not list((result_dir / "groups").glob("*/review*"))


@pytest.mark.parametrize(
    ("has_current", "recorded", "kept"),
    [
        (False, "old", "old"),  # crashed after moving the old review aside
        (True, "old", "old"),  # crashed after moving the new one in, before the grade
        (True, "new", "new"),  # crashed after replacing the grade, before deleting the old
    ],
)
def test_recover_puts_back_the_review_that_matches_the_grade(
    result_dir: Path, has_current: bool, recorded: str, kept: str
) -> None:
    group_dir = result_dir / "groups" / "changelog-entry"
    prompts = {"old": b"old prompt\n", "new": b"new prompt\n"}
    (group_dir / "review.old-0badc0de").mkdir()
    (group_dir / "review.old-0badc0de" / "prompt.md").write_bytes(prompts["old"])
    if has_current:
        (group_dir / "review").mkdir()
        (group_dir / "review" / "prompt.md").write_bytes(prompts["new"])
    (group_dir / "review.new-12345678").mkdir()
    (group_dir / ".semantic-grade.json.deadbeef.tmp").write_bytes(b"{}")
    sha = hashlib.sha256(prompts[recorded]).hexdigest()
    grade = {"prompt": {"file": "review/prompt.md", "sha256": sha}}
    (group_dir / "semantic-grade.json").write_text(json.dumps(grade), encoding="utf-8")

    recover(group_dir)

    assert (group_dir / "review" / "prompt.md").read_bytes() == prompts[kept]
    advisory = ("review", ".semantic", "semantic")
    assert sorted(p.name for p in group_dir.iterdir() if p.name.startswith(advisory)) == [
        "review",
        "semantic-grade.json",
    ]
    assert verify(result_dir) == []
