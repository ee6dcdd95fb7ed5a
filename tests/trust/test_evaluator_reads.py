"""The evaluator's own reads: a path named by a script or planted by a subject is opened only
inside that subject's workspace, as a regular file, never through a link pointing out."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_skill_eval.common.entries import FileTooLargeError, read_inside
from pytest_skill_eval.evidence.redact import Redactor, Tally
from pytest_skill_eval.grading import support as grading_support
from pytest_skill_eval.hosts import dialect
from pytest_skill_eval.hosts.codex import host as codex_host
from pytest_skill_eval.hosts.codex import tools as codextools
from pytest_skill_eval.hosts.codex.host import rollout_mentions
from pytest_skill_eval.hosts.context_records import copy_observer_records
from pytest_skill_eval.hosts.dialect import render_for_host, skill_name
from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall
from tests.grading.grading_scenarios import body_run
from tests.grading.test_errors import FILE_TEXT, assert_error, grade_one
from tests.hosts.test_codex_host import DATA
from tests.support.files import tree_bytes, write
from tests.trust.test_planted_entries import finishes, unblock

CANARY = "CANARY-7f3c1e-never-read-by-the-evaluator"
OUTSIDE = f"{CANARY} outside\nkeep me\n"
RELATIVE = f"{CANARY} definition root\nkeep me\n"
LIMIT = 1024


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace next to an outside canary, links planted in it that point out, and the
    evaluator's working directory (the definition root) holding a canary of the same name as a
    relative path the script uses; returns the workspace."""
    write(tmp_path / "outside.txt", OUTSIDE)
    root = tmp_path / "root"
    write(root / "notes.txt", RELATIVE)
    workspace = root / "ws"
    write(workspace / "inside.txt", "first\nkeep me\n")
    (workspace / "link.txt").symlink_to(tmp_path / "outside.txt")
    (workspace / "out").symlink_to(tmp_path)
    (workspace / "same.txt").symlink_to("inside.txt")
    monkeypatch.chdir(root)
    return workspace


def escaping_names(tmp_path: Path) -> list[str]:
    """Names that lead out of the workspace at tmp_path/root/ws (or into the definition root)."""
    return [
        "../../outside.txt",
        str(tmp_path / "outside.txt"),
        "notes.txt",  # resolved against the evaluator's working directory, it is the root's
        "link.txt",
        "out/outside.txt",
        str(tmp_path / "root" / "ws" / "link.txt"),
        "sub/../../../outside.txt",
    ]


def test_a_name_leading_out_of_the_workspace_is_never_opened(planted: Path, tmp_path: Path) -> None:
    for name in escaping_names(tmp_path):
        assert read_inside(planted, name, limit=LIMIT) is None, name
    assert read_inside(planted, "inside.txt", limit=LIMIT) == b"first\nkeep me\n"
    assert read_inside(planted, str(planted / "inside.txt"), limit=LIMIT) == b"first\nkeep me\n"
    # A link that stays inside is the file it names; the workspace itself is no file.
    assert read_inside(planted, "same.txt", limit=LIMIT) == b"first\nkeep me\n"
    assert read_inside(planted, ".", limit=LIMIT) is None


def edit(path: str) -> ToolCall:
    return ToolCall("edit", {"path": path, "edits": [{"oldText": "keep me", "newText": "gone"}]})


def codex_patch(call: ToolCall, workspace: Path) -> str:
    response = ScriptedResponse(tool_calls=(call,), stop="tool_use")
    [rendered] = render_for_host(response, "codex", {}, workspace).tool_calls
    assert rendered.name == "apply_patch"
    patch = rendered.arguments["input"]
    assert isinstance(patch, str)
    return patch


def test_a_codex_edit_outside_the_workspace_is_a_literal_patch_without_its_bytes(
    planted: Path, tmp_path: Path
) -> None:
    for name in escaping_names(tmp_path):
        patch = codex_patch(edit(name), planted)
        assert CANARY not in patch, name
        # What the host refuses: the script's own text, as a literal hunk.
        assert patch == (
            f"*** Begin Patch\n*** Update File: {name}\n@@\n-keep me\n+gone\n*** End Patch\n"
        )


def test_a_relative_codex_edit_reads_the_workspace_file(planted: Path) -> None:
    patch = codex_patch(edit("inside.txt"), planted)
    assert patch.endswith("@@\n first\n-keep me\n+gone\n*** End Patch\n")


def test_a_codex_edit_of_a_planted_fifo_does_not_block(planted: Path) -> None:
    os.mkfifo(planted / "trap")
    try:
        patch = finishes(lambda: codex_patch(edit(str(planted / "trap")), planted))
        assert patch.endswith("@@\n-keep me\n+gone\n*** End Patch\n")
    finally:
        unblock(planted / "trap")


def test_a_skill_file_linked_out_is_not_read(tmp_path: Path) -> None:
    write(tmp_path / "outside.md", f"---\nname: {CANARY}\n---\n")
    skill = tmp_path / "snap" / "0"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").symlink_to(tmp_path / "outside.md")
    assert skill_name(skill) == "0"
    (skill / "SKILL.md").unlink()
    os.mkfifo(skill / "SKILL.md")
    try:
        assert finishes(lambda: skill_name(skill)) == "0"
    finally:
        unblock(skill / "SKILL.md")


def test_observer_records_linked_out_of_the_home_are_not_copied(tmp_path: Path) -> None:
    line = json.dumps({"surface": "system", "text": CANARY}) + "\n"
    write(tmp_path / "outside.jsonl", line)
    home = tmp_path / "home"
    home.mkdir()
    (home / "context-observations.jsonl").symlink_to(tmp_path / "outside.jsonl")
    variant_dir = tmp_path / "variant"
    variant_dir.mkdir()
    copy_observer_records(
        home / "context-observations.jsonl", variant_dir, Redactor({"KEY": "sekrit"}), Tally()
    )
    for path, data in tree_bytes(variant_dir):
        assert CANARY.encode() not in data, path


def test_a_rollout_linked_out_or_planted_as_a_fifo_is_not_read(tmp_path: Path) -> None:
    mention = {
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": f"<skill>\n<name>{CANARY}</name>"}],
        },
    }
    write(tmp_path / "outside.jsonl", json.dumps(mention) + "\n")
    sessions = tmp_path / "sessions" / "2026"
    sessions.mkdir(parents=True)
    (sessions / "rollout-link.jsonl").symlink_to(tmp_path / "outside.jsonl")
    os.mkfifo(sessions / "rollout-trap.jsonl")
    try:
        assert finishes(lambda: rollout_mentions(tmp_path, tmp_path / "sessions")) == []
    finally:
        unblock(sessions / "rollout-trap.jsonl")


def test_a_sessions_directory_the_subject_replaced_by_a_link_is_not_walked(
    tmp_path: Path,
) -> None:
    # Codex's home is the subject's to write: it can swap `sessions`, or a folder below it, for
    # a link to anywhere the evaluator can read, holding a rollout that names the target skill.
    outside = tmp_path / "outside" / "2026" / "12" / "01"
    write(outside / "rollout-x.jsonl", (DATA / "rollout-mention.jsonl").read_text())
    home = tmp_path / "home"
    codex = home / "home" / ".codex"
    codex.mkdir(parents=True)
    (codex / "sessions").symlink_to(tmp_path / "outside", target_is_directory=True)
    assert rollout_mentions(home, codex / "sessions") == []
    (codex / "sessions").unlink()
    (codex / "sessions").mkdir()
    (codex / "sessions" / "2026").symlink_to(tmp_path / "outside" / "2026")
    assert rollout_mentions(home, codex / "sessions") == []
    # `.codex` itself swapped for a link out is not followed either.
    (tmp_path / "outside" / "sessions").symlink_to(tmp_path / "outside")
    os.rename(codex, home / "home" / "gone")
    codex.symlink_to(tmp_path / "outside", target_is_directory=True)
    assert rollout_mentions(home, codex / "sessions") == []
    codex.unlink()
    day = codex / "sessions" / "2026" / "12" / "01"
    # Rollouts lie three folders down: one deeper is not walked to.
    write(day / "extra" / "rollout-x.jsonl", (DATA / "rollout-mention.jsonl").read_text())
    assert rollout_mentions(home, codex / "sessions") == []
    # The same rollout in place is read: the walk itself works.
    write(day / "rollout-x.jsonl", (DATA / "rollout-mention.jsonl").read_text())
    assert [name for name, _ in rollout_mentions(home, codex / "sessions")] == ["greet"]


def test_grading_never_opens_a_fifo_swapped_in_for_a_captured_file(tmp_path: Path) -> None:
    built = body_run(tmp_path)
    captured = built.run_dir / "workspace" / "result.json"
    captured.unlink()
    os.mkfifo(captured)
    try:
        result = finishes(lambda: grade_one(built, FILE_TEXT))
    finally:
        unblock(captured)
    assert_error(result, "workspace evidence changed after capture: result.json")


def test_a_rollout_the_subject_inflated_is_not_read_into_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The subject can write any size of file in Codex's home (a sparse one costs it nothing).
    mention = (DATA / "rollout-mention.jsonl").read_bytes()
    monkeypatch.setattr(codex_host, "ROLLOUT_LIMIT", len(mention))
    day = tmp_path / "home" / ".codex" / "sessions" / "2026" / "12" / "01"
    write(day / "rollout-x.jsonl", mention.decode())
    sessions = tmp_path / "home" / ".codex" / "sessions"
    assert [name for name, _ in rollout_mentions(tmp_path, sessions)] == ["greet"]
    with open(day / "rollout-x.jsonl", "ab") as grown:
        grown.write(b"\n")
    assert rollout_mentions(tmp_path, sessions) == []


def test_a_file_over_the_limit_is_refused_without_being_read_whole(planted: Path) -> None:
    assert read_inside(planted, "inside.txt", limit=len(b"first\nkeep me\n")) is not None
    with pytest.raises(FileTooLargeError, match="larger than 13 bytes"):
        read_inside(planted, "inside.txt", limit=13)
    # A sparse file of a gibibyte costs the subject nothing; its size alone refuses it.
    with open(planted / "huge.txt", "wb") as huge:
        huge.truncate(1 << 30)
    with pytest.raises(FileTooLargeError, match=f"huge.txt is larger than {LIMIT} bytes"):
        finishes(lambda: read_inside(planted, "huge.txt", limit=LIMIT))


def test_each_reader_refuses_a_file_over_its_limit(
    planted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codextools, "EDIT_LIMIT", 4)
    patch = codex_patch(edit("inside.txt"), planted)
    assert patch.endswith("@@\n-keep me\n+gone\n*** End Patch\n")  # literal: not read
    skill = tmp_path / "snap" / "1"
    write(skill / "SKILL.md", "---\nname: named\n---\n")
    assert skill_name(skill) == "named"
    monkeypatch.setattr(dialect, "SKILL_FILE_LIMIT", 4)
    assert skill_name(skill) == "1"
    built = body_run(tmp_path / "graded")
    monkeypatch.setattr(grading_support, "FILE_CHECK_LIMIT", 4)
    assert_error(
        grade_one(built, FILE_TEXT),
        "workspace file too large for a file check: result.json holds more than 4 bytes, "
        "the most a check reads",
    )
