"""Neutral scripts on Codex: reads as `exec_command`, writes and edits as `apply_patch`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.codex.tools import add_file_patch, edit_patch, shell_quote
from pytest_skill_eval.hosts.dialect import render_for_host
from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall

CODEX = "codex"


def one(
    call: ToolCall, placeholders: dict[str, str] | None = None, workspace: Path | None = None
) -> ToolCall:
    response = ScriptedResponse(tool_calls=(call,), stop="tool_use")
    [rendered] = render_for_host(response, CODEX, placeholders or {}, workspace).tool_calls
    return rendered


def test_read_is_a_quoted_cat() -> None:
    call = one(ToolCall("read", {"path": "/w/it's here.txt"}, id="call_1"))
    assert call == ToolCall("exec_command", {"cmd": "cat '/w/it'\"'\"'s here.txt'"}, "call_1")
    part = one(ToolCall("read", {"path": "/w/a.txt", "offset": 3, "limit": 2}))
    assert part.arguments == {"cmd": "sed -n '3,4p' '/w/a.txt'"}


def test_the_quoting_survives_a_real_shell(tmp_path: Path) -> None:
    target = tmp_path / "it's $HOME `x`.txt"
    target.write_text("payload\n", encoding="utf-8")
    command = f"cat {shell_quote(str(target))}"
    done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, check=True)
    assert done.stdout == "payload\n"


def test_skill_activation_reads_the_snapshotted_skill_file(tmp_path: Path) -> None:
    skill = tmp_path / "snap" / "0"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greet\n---\nbody\n", encoding="utf-8")
    call = one(ToolCall("skill", {"name": "greet"}), {"skill:0": str(skill)})
    assert call.arguments == {"cmd": f"cat '{skill}/SKILL.md'"}
    unknown = ToolCall("skill", {"name": "other"})
    assert one(unknown, {"skill:0": str(skill)}) == unknown


def test_write_is_an_apply_patch_add_file() -> None:
    call = one(ToolCall("write", {"path": "/w/new.txt", "content": "a\nb\n"}))
    assert call.name == "apply_patch"
    assert call.arguments == {
        "input": "*** Begin Patch\n*** Add File: /w/new.txt\n+a\n+b\n*** End Patch\n"
    }
    assert (
        add_file_patch("/w/e.txt", "")
        == "*** Begin Patch\n*** Add File: /w/e.txt\n+\n*** End Patch\n"
    )


def test_edit_is_an_update_hunk_of_whole_lines_with_context(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("one\ntwo\nthree apples\nfour\nfive\nsix\nseven\n", encoding="utf-8")
    call = one(
        ToolCall(
            "edit", {"path": str(target), "edits": [{"oldText": "apples", "newText": "pears"}]}
        ),
        workspace=tmp_path,
    )
    assert call.name == "apply_patch"
    assert call.arguments["input"] == (
        f"*** Begin Patch\n*** Update File: {target}\n@@\n"
        " one\n two\n-three apples\n+three pears\n four\n five\n six\n*** End Patch\n"
    )
    # The legacy single-edit form gives the same patch.
    legacy = one(
        ToolCall("edit", {"path": str(target), "oldText": "apples", "newText": "pears"}),
        workspace=tmp_path,
    )
    assert legacy == call


def test_edit_of_text_that_is_not_there_is_a_literal_hunk(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("alpha\n", encoding="utf-8")
    patch = edit_patch(str(target), [("missing", "x")], tmp_path)
    assert patch == f"*** Begin Patch\n*** Update File: {target}\n@@\n-missing\n+x\n*** End Patch\n"
    assert "-gone" in edit_patch(str(tmp_path / "absent.txt"), [("gone", "here")], tmp_path)


def test_several_edits_make_one_patch_of_the_final_text(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("a\nb\nc\n", encoding="utf-8")
    patch = edit_patch(str(target), [("a", "A"), ("c", "C")], tmp_path)
    assert patch.endswith("@@\n-a\n-b\n-c\n+A\n+b\n+C\n*** End Patch\n")


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("exec_command", {"cmd": "ls"}),
        ToolCall("edit", {"path": "/w/x", "edits": [{"oldText": 1}]}),
        ToolCall("write", {"path": "/w/x"}),
    ],
)
def test_native_or_malformed_calls_pass_through(call: ToolCall) -> None:
    assert one(call) == call


def test_unknown_host_is_refused() -> None:
    response = ScriptedResponse(tool_calls=(ToolCall("read", {"path": "/x"}),), stop="tool_use")
    with pytest.raises(ValueError, match="unknown host 'cursor'"):
        render_for_host(response, "cursor", {}, None)


def test_run_command_is_the_evaluators_namespaced_mcp_tool_on_the_wire() -> None:
    from pytest_skill_eval.modelserver.responses import responses_chunks

    call = one(ToolCall("run_command", {"command": "look"}))
    assert (call.name, call.namespace, dict(call.arguments)) == (
        "run_command",
        "mcp__skill_eval",  # Codex 0.171.0's namespace of the `skill-eval` server's tools
        {"command": "look"},
    )
    response = ScriptedResponse(tool_calls=(call,), stop="tool_use")
    stream = b"".join(
        responses_chunks(response, model="m", request_index=0, call_ids=["c"], error_message="")
    ).decode()
    assert '"namespace":"mcp__skill_eval"' in stream.replace(" ", "")
    plain = ScriptedResponse(tool_calls=(ToolCall("exec_command", {"cmd": "ls"}),), stop="tool_use")
    chunks = responses_chunks(plain, model="m", request_index=0, call_ids=["c"], error_message="")
    assert "namespace" not in b"".join(chunks).decode()
