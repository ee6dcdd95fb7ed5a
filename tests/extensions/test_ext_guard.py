"""guard.mjs in the real Pi: declared tools only, and read/write/edit stay inside their roots."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.pi.extensions import GUARD
from tests.support.shared import shared_pi_run

pytestmark = pytest.mark.pi

ESCAPES = "path escapes the evaluation environment"
UNRESOLVABLE = "path cannot be resolved inside the evaluation environment"
SECRET = "TOP-SECRET-4711"


def call(ident: str, name: str, **arguments: Any) -> dict[str, Any]:
    """One scripted tool call with a fixed id, so results can be looked up."""
    return {"id": ident, "name": name, "arguments": arguments}


def two_step_script(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """A script that makes all `calls` in one assistant message, then answers "done"."""
    return {
        "version": 1,
        "interactions": [
            {"response": {"text": "Working.", "tool_calls": calls}},
            {"response": {"text": "done"}},
        ],
    }


def plant_outside(sandbox: Any) -> dict[str, Path]:
    """Files and links that point out of the workspace, as a subject's fixture might contain."""
    outside_dir = sandbox.outside / "dir"
    outside_dir.mkdir()
    (outside_dir / "secret.txt").write_text(SECRET + " dir\n", encoding="utf-8")
    top_secret = sandbox.outside / "top-secret.txt"
    top_secret.write_text(SECRET + " top\n", encoding="utf-8")
    target_file = sandbox.outside / "target.txt"
    target_file.write_text("outside original\n", encoding="utf-8")
    ws = sandbox.workspace
    (ws / "inside.txt").write_text("inside content\n", encoding="utf-8")
    (ws / "link-dir").symlink_to(outside_dir, target_is_directory=True)
    (ws / "link-file.txt").symlink_to(target_file)
    (ws / "dangling").symlink_to(sandbox.outside / "not-there.txt")
    (sandbox.home / "home-secret.txt").write_text(SECRET + " home\n", encoding="utf-8")
    return {"outside_dir": outside_dir, "top_secret": top_secret, "target_file": target_file}


def _read_run(pi_launcher: Any, base: Path) -> Any:
    """One Pi run making every read attempt at once; `ls` is active but not declared."""
    sandbox = pi_launcher.sandbox(base)
    planted = plant_outside(sandbox)
    skill = sandbox.root / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("skill body\n", encoding="utf-8")
    ws = sandbox.workspace
    calls = [
        call("in_rel", "read", path="inside.txt"),
        call("in_at", "read", path="@inside.txt"),
        call("in_abs", "read", path=str(ws / "inside.txt")),
        call("skill_abs", "read", path=str(skill / "SKILL.md")),
        call("out_rel", "read", path="../outside/top-secret.txt"),
        call("out_abs", "read", path=str(planted["top_secret"])),
        call("out_at", "read", path="@" + str(planted["top_secret"])),
        call("out_home", "read", path="~/home-secret.txt"),
        call("link_dir", "read", path="link-dir/secret.txt"),
        call("link_file", "read", path="link-file.txt"),
        # The kernel follows link-dir before `..`, so this lands beside the outside dir.
        call("link_dotdot", "read", path=str(ws / "link-dir" / ".." / "top-secret.txt")),
        call("missing", "read", path="missing.txt"),
        call("undeclared", "ls", path="."),
    ]
    env = {
        "SKILL_EVAL_ALLOWED_ROOTS": json.dumps([str(ws), str(skill)]),
        "SKILL_EVAL_ALLOWED_TOOLS": json.dumps(["read"]),
    }
    return pi_launcher.run_json(
        sandbox,
        two_step_script(calls),
        ["Read everything."],
        extensions=[GUARD],
        tools=["read", "ls"],
        env=env,
    ).passed()


read_run = shared_pi_run("guard-read", _read_run)


@pytest.mark.parametrize("ident", ["in_rel", "in_at", "in_abs"])
def test_read_inside_workspace_is_allowed(read_run: Any, ident: str) -> None:
    outcome = read_run.tool_outcomes()[ident]
    assert not outcome.is_error, outcome.text
    assert "inside content" in outcome.text


def test_read_inside_another_allowed_root_is_allowed(read_run: Any) -> None:
    outcome = read_run.tool_outcomes()["skill_abs"]
    assert not outcome.is_error, outcome.text
    assert "skill body" in outcome.text


@pytest.mark.parametrize(
    "ident", ["out_rel", "out_abs", "out_at", "out_home", "link_dir", "link_file", "link_dotdot"]
)
def test_read_outside_the_roots_is_blocked(read_run: Any, ident: str) -> None:
    outcome = read_run.tool_outcomes()[ident]
    assert outcome.is_error
    assert outcome.text.startswith(ESCAPES), outcome.text


def test_no_outside_content_reaches_the_model(read_run: Any) -> None:
    bodies = [json.dumps(request.body) for request in read_run.requests]
    assert len(bodies) == 2
    assert all(SECRET not in body for body in bodies)


def test_read_of_a_missing_path_is_blocked_as_unresolvable(read_run: Any) -> None:
    outcome = read_run.tool_outcomes()["missing"]
    assert outcome.is_error
    assert outcome.text == f"{UNRESOLVABLE}: missing.txt"


def test_active_but_undeclared_tool_is_blocked(read_run: Any) -> None:
    outcome = read_run.tool_outcomes()["undeclared"]
    assert outcome.name == "ls"
    assert outcome.is_error
    assert outcome.text == "Tool is not declared for this evaluation: ls"


def _write_run(pi_launcher: Any, base: Path) -> Any:
    """One Pi run making every write and edit attempt at once."""
    sandbox = pi_launcher.sandbox(base)
    plant_outside(sandbox)
    ws = sandbox.workspace
    (ws / "to-edit.txt").write_text("alpha beta\n", encoding="utf-8")
    edits = [{"oldText": "outside", "newText": "PWNED"}]
    calls = [
        call("new_nested", "write", path="nested/deep/new.txt", content="nested ok\n"),
        call("at_nested", "write", path="@at-dir/at.txt", content="at ok\n"),
        call("out_rel", "write", path="../outside/escape.txt", content="x"),
        call("out_abs", "write", path=str(sandbox.outside / "escape-abs.txt"), content="x"),
        call("out_at", "write", path="@" + str(sandbox.outside / "escape-at.txt"), content="x"),
        call("out_home", "write", path="~/planted.txt", content="x"),
        call("link_dir", "write", path="link-dir/through.txt", content="x"),
        call("link_dir_new", "write", path="link-dir/new-sub/through.txt", content="x"),
        call("link_file", "write", path="link-file.txt", content="PWNED\n"),
        call("dangling", "write", path="dangling", content="x"),
        call("dotdot", "write", path=str(ws / "link-dir" / ".." / "dotdot.txt"), content="x"),
        call(
            "edit_in", "edit", path="to-edit.txt", edits=[{"oldText": "beta", "newText": "gamma"}]
        ),
        call("edit_link", "edit", path="link-file.txt", edits=edits),
        call("edit_out", "edit", path="../outside/target.txt", edits=edits),
    ]
    return pi_launcher.run_json(
        sandbox,
        two_step_script(calls),
        ["Write everything."],
        extensions=[GUARD],
        tools=["read", "write", "edit"],
    ).passed()


write_run = shared_pi_run("guard-write", _write_run)


def test_write_into_a_new_nested_dir_inside_the_workspace_is_allowed(write_run: Any) -> None:
    outcome = write_run.tool_outcomes()["new_nested"]
    assert not outcome.is_error, outcome.text
    ws = write_run.sandbox.workspace
    assert (ws / "nested" / "deep" / "new.txt").read_text(encoding="utf-8") == "nested ok\n"


def test_write_with_at_prefix_inside_is_allowed_and_strips_one_at(write_run: Any) -> None:
    outcome = write_run.tool_outcomes()["at_nested"]
    assert not outcome.is_error, outcome.text
    ws = write_run.sandbox.workspace
    assert (ws / "at-dir" / "at.txt").read_text(encoding="utf-8") == "at ok\n"
    assert not (ws / "@at-dir").exists()


@pytest.mark.parametrize(
    "ident", ["out_rel", "out_abs", "out_at", "out_home", "link_dir", "link_dir_new", "link_file"]
)
def test_write_outside_the_workspace_is_blocked(write_run: Any, ident: str) -> None:
    outcome = write_run.tool_outcomes()[ident]
    assert outcome.is_error
    assert outcome.text.startswith(ESCAPES), outcome.text


def test_write_through_a_dangling_link_is_blocked(write_run: Any) -> None:
    outcome = write_run.tool_outcomes()["dangling"]
    assert outcome.is_error
    assert outcome.text == f"{UNRESOLVABLE}: dangling"
    assert not (write_run.sandbox.outside / "not-there.txt").exists()


def test_write_with_dotdot_after_a_link_is_blocked(write_run: Any) -> None:
    outcome = write_run.tool_outcomes()["dotdot"]
    assert outcome.is_error
    assert outcome.text.startswith(ESCAPES), outcome.text
    assert not (write_run.sandbox.outside / "dotdot.txt").exists()


def test_nothing_was_written_outside_the_workspace(write_run: Any) -> None:
    sandbox = write_run.sandbox
    outside_files = sorted(
        str(Path(dirpath, name).relative_to(sandbox.outside))
        for dirpath, _dirs, files in os.walk(sandbox.outside)
        for name in files
    )
    assert outside_files == ["dir/secret.txt", "target.txt", "top-secret.txt"]
    target = sandbox.outside / "target.txt"
    assert target.read_text(encoding="utf-8") == "outside original\n"
    assert sorted(p.name for p in sandbox.home.iterdir()) == ["home-secret.txt"]
    assert not (sandbox.workspace / "~").exists()


def test_edit_inside_the_workspace_is_allowed(write_run: Any) -> None:
    outcome = write_run.tool_outcomes()["edit_in"]
    assert not outcome.is_error, outcome.text
    text = (write_run.sandbox.workspace / "to-edit.txt").read_text(encoding="utf-8")
    assert text == "alpha gamma\n"


@pytest.mark.parametrize("ident", ["edit_link", "edit_out"])
def test_edit_outside_the_workspace_is_blocked(write_run: Any, ident: str) -> None:
    outcome = write_run.tool_outcomes()[ident]
    assert outcome.is_error
    assert outcome.text.startswith(ESCAPES), outcome.text


def test_guard_refuses_to_load_with_malformed_allowed_roots(
    pi_launcher: Any, tmp_path: Path
) -> None:
    run = pi_launcher.run_json(
        pi_launcher.sandbox(tmp_path),
        {"version": 1, "interactions": [{"response": {"text": "never"}}]},
        ["hi"],
        extensions=[GUARD],
        tools=["read"],
        env={"SKILL_EVAL_ALLOWED_ROOTS": "[not json"},
    )
    assert run.returncode != 0
    assert "SKILL_EVAL_ALLOWED_ROOTS is not valid JSON" in run.stderr
    assert run.requests == []
