"""Real Codex against the scripted model: edits a script names outside the workspace are refused
by the host, and no byte of the files they name reaches the result."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.files import write
from tests.support.roots import Group, build, runtime, variant
from tests.support.runs import model_requests, result_dir, run_detached, run_record

pytestmark = [pytest.mark.pi, pytest.mark.codex]

# One canary per way out; the evaluator must never put any of them into a byte it writes.
CANARIES = {
    "dotdot": "CANARY-dotdot-5d1a9e",
    "absolute": "CANARY-absolute-b27c40",
    "relative": "CANARY-relative-e8f613",
    "link": "CANARY-link-0c94d2",
}


def canary_file(path: Path, name: str) -> Path:
    """A file whose first line is the canary and whose second the edit's old text."""
    return write(path, f"{CANARIES[name]}\nkeep me\n")


def edit(path: str) -> dict[str, object]:
    return {
        "tool_calls": [
            {
                "name": "edit",
                "arguments": {"path": path, "edits": [{"oldText": "keep me", "newText": "new"}]},
            }
        ]
    }


def test_codex_edits_outside_the_workspace_are_refused_and_never_read(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = {
        # `../outside.txt` from the definition root, where the evaluator works.
        "dotdot": canary_file(tmp_path / "outside.txt", "dotdot"),
        "absolute": canary_file(tmp_path / "absolute.txt", "absolute"),
        # The workspace has no notes.txt; the definition root does.
        "relative": canary_file(root / "notes.txt", "relative"),
        "link": canary_file(tmp_path / "linked.txt", "link"),
    }
    before = {name: path.read_bytes() for name, path in outside.items()}
    write(root / "fixture" / "README.md", "A task.\n")
    group = Group(
        id="reads",
        turns=["Tidy the notes."],
        tools=["read", "write", "edit"],
        runtime=runtime(host="codex"),
        candidate=variant(),
        scripts={
            "candidate": [
                # The subject plants a link in its workspace pointing out.
                {
                    "tool_calls": [
                        {"name": "bash", "arguments": {"command": f"ln -s {outside['link']} l"}}
                    ]
                },
                edit("../outside.txt"),
                edit(str(outside["absolute"])),
                edit("notes.txt"),
                edit("{{workspace}}/l"),
                {"text": "Done."},
            ]
        },
    )
    build(root, [group])
    done = run_detached(root, "--skill-eval-variant", "candidate")
    assert done.returncode == 0, done.stdout + done.stderr

    run = run_record(root, "reads@codex", "candidate")
    assert run["state"] == "complete", run["error"]
    [turn] = run["turns"]
    # Codex reports no event for a patch it refuses: only the link's command shows, no edit.
    names = [(a["toolName"], a["isError"]) for a in turn["toolActivity"]]
    assert names == [("exec_command", False)]
    assert {name: path.read_bytes() for name, path in outside.items()} == before
    inputs = model_requests(result_dir(root) / "groups/reads@codex/candidate")[-1]["body"]["input"]
    # What each patch carried: the script's own text as a literal hunk, never a line of a file.
    patches = [item["input"] for item in inputs if item.get("type") == "custom_tool_call"]
    assert [p.split("\n")[2:5] for p in patches] == [["@@", "-keep me", "+new"]] * 4
    # The host's own refusal of each, as the model received it.
    outputs = [item["output"] for item in inputs if item.get("type") == "custom_tool_call_output"]
    assert len(outputs) == 4
    for output in outputs:
        assert output.startswith("apply_patch verification failed: Failed to read file"), output

    for path in sorted(result_dir(root).rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            for canary in CANARIES.values():
                assert canary.encode() not in data, (canary, path)
    for canary in CANARIES.values():
        assert canary not in done.stdout + done.stderr
