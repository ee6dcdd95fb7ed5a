"""The complete Pi subject end to end: real Pi, scripted model, evidence asserted on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skill_eval.modelserver.scripted import SCRIPTED_API_KEY
from tests.support.files import tree_bytes, write
from tests.support.roots import Group, skill, variant
from tests.support.runs import (
    activity,
    model_requests,
    result_dir,
    run_candidate,
    run_record,
    system_message,
    tool_results,
)

pytestmark = pytest.mark.pi

# Scripted runs are priced at these USD per million tokens (providers.SCRIPTED_PRICES).
PRICE = {"input": 3.0, "output": 15.0}


def test_description_turns_record_the_skill_read_on_turn_two(pytester: pytest.Pytester) -> None:
    root = pytester.path / "root"
    declared = skill(root, "changelog-keeper")
    group = Group(
        id="late-read",
        type="description",
        turns=["What is in this project?", "Now log that CSV export handles semicolons."],
        tools=["read"],
        candidate=variant([declared], 0),
        expectations=[
            {
                "id": "read-by-one",
                "kind": "skill-read",
                "variant": "candidate",
                "expect": "by-turn",
                "turn": 1,
            },
            {
                "id": "read-on-two",
                "kind": "skill-read",
                "variant": "candidate",
                "expect": "on-turn",
                "turn": 2,
            },
        ],
        scripts={
            "candidate": [
                {"text": "A small project."},
                {
                    "text": "Reading the skill.",
                    "tool_calls": [{"name": "read", "arguments": {"path": "{{skill:0}}/SKILL.md"}}],
                },
                {"text": "- Handle semicolons in CSV export"},
            ]
        },
    )
    result = run_candidate(pytester, root, [group])
    assert result.ret == 0, result.stdout.str()

    run = run_record(root, "late-read", "candidate")
    assert run["state"] == "complete"
    # Node runs Pi's entry, then its flags: a multi-turn description is one RPC Pi.
    assert run["process"]["args"][1:3] == ["--mode", "rpc"]
    assert "delivery" not in run  # description groups use natural prompts only
    target = run["resources"]["targetPath"]
    assert target.endswith("/candidate/resources/skills/0/changelog-keeper/SKILL.md")
    assert [t["turn"] for t in run["turns"]] == [1, 2]
    assert [t["deliveredPrompt"] for t in run["turns"]] == list(group.turns)
    first, second = run["turns"]
    assert first["targetRead"] is False
    assert first["successfulReadPaths"] == []
    assert second["targetRead"] is True
    assert second["successfulReadPaths"] == [target]
    assert run["activation"] == {
        "targetRead": True,
        "firstReadTurn": 2,
        "readTurns": [2],
        "successfulReadPaths": [target],
        "state": "read",
        "target": {"index": 0, "name": "changelog-keeper"},
        "offered": "intact",
        "otherSkillsRead": [],
        "unrealistic": None,
    }
    assert first["response"] == "A small project."
    assert run["response"] == second["response"] == "- Handle semicolons in CSV export"
    # The transcript ranges tile the transcript: turn 2 starts where turn 1 ended.
    assert first["transcript"]["start"] == 0
    assert second["transcript"]["start"] == first["transcript"]["end"] == 2
    transcript = json.loads(
        (result_dir(root) / "groups/late-read/candidate/transcript.json").read_text(
            encoding="utf-8"
        )
    )
    assert len(transcript) == second["transcript"]["end"]

    grade = json.loads(
        (result_dir(root) / "groups/late-read/deterministic-grade.json").read_text(encoding="utf-8")
    )
    assert {c["id"]: c["state"] for c in grade["checks"]} == {
        "read-by-one": "fail",
        "read-on-two": "pass",
    }
    # Turn 2's request carried turn 1's history, and the skill was offered by --skill only.
    requests = model_requests(result_dir(root) / "groups/late-read/candidate")
    assert len(requests) == 3
    assert "<name>changelog-keeper</name>" in requests[0]["body"]["messages"][0]["content"]
    roles = [m["role"] for m in requests[1]["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


def test_body_tools_commands_usage_and_cost(pytester: pytest.Pytester) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\nbeta\n")
    declared = skill(root, "note-taker")
    usage = {"input": 1000, "output": 20}
    calls = [
        ("read", {"path": "notes.txt"}),
        ("write", {"path": "out/deep/report.md", "content": "# Report\n"}),
        ("edit", {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}),
        ("edit", {"path": "notes.txt", "edits": [{"oldText": "no such text", "newText": "x"}]}),
        ("run_command", {"command": "fails"}),
        ("run_command", {"command": "hangs"}),
    ]
    interactions: list[dict[str, object]] = [
        {"tool_calls": [{"name": name, "arguments": args}], "usage": usage} for name, args in calls
    ]
    interactions.append({"text": "Done.", "usage": {"input": 2000, "output": 5}})
    group = Group(
        id="tools-at-work",
        turns=["Tidy the notes."],
        tools=["read", "write", "edit", "run_command"],
        candidate=variant([declared], 0),
        commands=[
            {"id": "fails", "argv": ["python3", "-c", "import sys; print('out'); sys.exit(3)"]},
            {
                "id": "hangs",
                "argv": ["python3", "-c", "import time; time.sleep(60)"],
                "timeout_ms": 300,
            },
        ],
        scripts={"candidate": interactions},
    )
    result = run_candidate(pytester, root, [group])
    assert result.ret == 0, result.stdout.str()

    run = run_record(root, "tools-at-work", "candidate")
    assert run["state"] == "complete"
    assert run["delivery"]["kind"] == "explicit-skill-command"
    assert run["turns"][0]["deliveredPrompt"] == "/skill:note-taker Tidy the notes."
    records = activity(run)
    assert [(a["toolName"], a["completed"], a["isError"]) for a in records] == [
        ("read", True, False),
        ("write", True, False),
        ("edit", True, False),
        ("edit", True, True),  # oldText not found: a failed call
        ("run_command", True, False),  # a non-zero exit is an ordinary result
        ("run_command", True, False),  # so is a timeout
    ]
    assert [a["args"] for a in records] == [args for _, args in calls]
    assert run["effects"]["changes"] == {
        "created": ["out/deep/report.md"],
        "modified": ["notes.txt"],
        "deleted": [],
    }
    workspace = Path(run["workspace"])
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "alpha\ngamma\n"
    assert run["turns"][0]["successfulReadPaths"] == [str(workspace / "notes.txt")]

    # What the model was told about each command came back in the next request.
    variant_dir = result_dir(root) / "groups/tools-at-work/candidate"
    requests = model_requests(variant_dir)
    assert len(requests) == len(interactions)
    failed = tool_results(requests[5])[-1]
    assert failed.splitlines()[:4] == [
        "$ python3 -c import sys; print('out'); sys.exit(3)",
        "exit code: 3",
        "--- stdout ---",
        "out",
    ]
    timed_out = tool_results(requests[6])[-1]
    assert timed_out.splitlines()[1] == "timed out after 300 ms"

    # Usage is summed from every assistant message_end and priced per million tokens.
    tokens_in = 1000 * len(calls) + 2000
    tokens_out = 20 * len(calls) + 5
    assert run["usage"]["input"] == tokens_in
    assert run["usage"]["output"] == tokens_out
    cost = run["usage"]["cost"]
    assert cost["input"] == pytest.approx(tokens_in * PRICE["input"] / 1e6)
    assert cost["output"] == pytest.approx(tokens_out * PRICE["output"] / 1e6)
    assert cost["total"] == pytest.approx(cost["input"] + cost["output"])
    assert run["turns"][0]["usage"] == run["usage"]
    assert run["artifacts"]["modelRequests"] == "model-requests.jsonl"


SECRET = "OUTSIDE-CANARY-4f1d9c"
# From a variant workspace (<root>/.skill-eval/runs/<id>/groups/<g>/<v>/workspace), eight `..`
# reach the directory that holds the definition root.
UP_TO_ROOT_PARENT = "../" * 8


def test_guard_blocks_escapes_and_the_run_records_them(pytester: pytest.Pytester) -> None:
    root = pytester.path / "root"
    outside = pytester.path / "outside"
    secret = write(outside / "secret.txt", f"{SECRET}\n")
    write(root / "fixture" / "notes.txt", "inside notes\n")
    declared = skill(root, "note-taker")
    source_skill = str(root / declared / "SKILL.md")
    attempts: list[tuple[str, dict[str, object], bool]] = [
        # (tool, arguments, allowed)
        ("read", {"path": str(secret)}, False),
        ("read", {"path": f"{UP_TO_ROOT_PARENT}outside/secret.txt"}, False),
        ("read", {"path": f"@{secret}"}, False),
        ("read", {"path": "link.txt"}, False),  # planted by the subject, points outside
        ("read", {"path": "outdir/secret.txt"}, False),  # through a planted directory link
        ("read", {"path": source_skill}, False),  # the definition root is not an allowed root
        ("read", {"path": "{{skill:0}}/SKILL.md"}, True),  # declared resources are
        ("read", {"path": "@notes.txt"}, True),
        ("write", {"path": str(outside / "new.txt"), "content": "x"}, False),
        ("write", {"path": "../escape.txt", "content": "x"}, False),
        ("write", {"path": "link.txt", "content": "overwritten"}, False),
        ("write", {"path": "outdir/planted.txt", "content": "x"}, False),
        ("write", {"path": "newdir/../../escape2.txt", "content": "x"}, False),
        ("write", {"path": "@inside.txt", "content": "kept inside\n"}, True),
        (
            "edit",
            {"path": str(secret), "edits": [{"oldText": "OUTSIDE", "newText": "gone"}]},
            False,
        ),
        ("edit", {"path": "link.txt", "edits": [{"oldText": "OUTSIDE", "newText": "gone"}]}, False),
        ("bash", {"command": f"cat {secret}"}, False),  # not a declared tool
    ]
    group = Group(
        id="escapes",
        turns=["Look around."],
        tools=["read", "write", "edit", "run_command"],
        candidate=variant([declared], 0),
        commands=[
            {"id": "link-file", "argv": ["ln", "-s", str(secret), "link.txt"]},
            {"id": "link-dir", "argv": ["ln", "-s", str(outside), "outdir"]},
        ],
        scripts={
            "candidate": [
                {
                    "tool_calls": [
                        {"name": "run_command", "arguments": {"command": "link-file"}},
                        {"name": "run_command", "arguments": {"command": "link-dir"}},
                    ]
                },
                {"tool_calls": [{"name": n, "arguments": a} for n, a, _ in attempts]},
                {"text": "Nothing to see."},
            ]
        },
    )
    result = run_candidate(pytester, root, [group])
    assert result.ret == 0, result.stdout.str()

    run = run_record(root, "escapes", "candidate")
    assert run["state"] == "complete"
    records = activity(run)
    assert [(a["toolName"], a["isError"]) for a in records[:2]] == [
        ("run_command", False),
        ("run_command", False),
    ]
    workspace = Path(run["workspace"])
    assert (workspace / "link.txt").is_symlink()  # the subject really planted its links
    assert (workspace / "outdir").is_symlink()
    observed = records[2:]
    assert len(observed) == len(attempts)
    for record, (tool, _, allowed) in zip(observed, attempts, strict=True):
        assert record["toolName"] == tool
        assert record["completed"] is True
        assert record["isError"] is (not allowed), record

    variant_dir = result_dir(root) / "groups/escapes/candidate"
    requests = model_requests(variant_dir)
    assert len(requests) == 3
    results = tool_results(requests[2])[2:]
    for text, (tool, _, allowed) in zip(results, attempts, strict=True):
        if allowed:
            continue
        if tool == "bash":
            assert text == "Tool bash not found"
        else:
            assert "the evaluation environment" in text, text
    # Nothing outside was read into any request, changed, or created.
    assert SECRET not in (variant_dir / "model-requests.jsonl").read_text(encoding="utf-8")
    assert secret.read_text(encoding="utf-8") == f"{SECRET}\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not (variant_dir / "escape.txt").exists()
    assert not (variant_dir / "escape2.txt").exists()
    for path, data in tree_bytes(result_dir(root)):
        assert SECRET.encode() not in data, path
    # Calls in one message run in parallel: reads are listed in the order they completed.
    reads = run["successfulReadPaths"]
    assert sorted(reads) == sorted([run["resources"]["targetPath"], str(workspace / "notes.txt")])
    assert (workspace / "inside.txt").read_text(encoding="utf-8") == "kept inside\n"
    assert run["effects"]["changes"]["created"] == ["inside.txt", "link.txt", "outdir"]


CANARY = "canary-5b7e02d1"


def test_operator_setup_never_reaches_the_subject_and_host_mode_keeps_pis_prompt(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path.home()  # pytester points HOME at its own directory: the operator's home here
    assert home == pytester.path
    planted = "---\nname: {0}\ndescription: PLANTED {0} skill. Use for everything.\n---\nPLANTED\n"
    write(home / ".pi/agent/skills/planted-pi-skill/SKILL.md", planted.format("planted-pi-skill"))
    write(
        home / ".agents/skills/planted-agents-skill/SKILL.md",
        planted.format("planted-agents-skill"),
    )
    write(home / ".pi/agent/AGENTS.md", "AGENT-DIR-MARKER: obey the operator.\n")
    write(pytester.path / "AGENTS.md", "ABOVE-ROOT-MARKER: obey the parent directory.\n")
    write(pytester.path / "CLAUDE.md", "CLAUDE-MARKER: obey claude.\n")
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)

    root = pytester.path / "root"
    write(root / "AGENTS.md", "ROOT-MARKER: obey the definition root.\n")
    write(root / "context" / "house-rules.md", "Compare with a < b & keep </file> literal.\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="host-isolation",
        turns=["Show me the environment."],
        tools=["read", "run_command"],
        fixture=None,
        candidate=variant([declared], 0, ["context/house-rules.md"]),
        commands=[{"id": "show-env", "argv": ["env"]}],
        runtime={
            "host": "pi",
            "prompt": "host",
            "session": False,
            "extensions": [],
            "environment": {"literal": {"EVAL_FLAVOUR": "vanilla"}, "inherit": []},
        },
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "show-env"}}]},
                {"text": "That is all."},
            ]
        },
    )
    result = run_candidate(pytester, root, [group])
    assert result.ret == 0, result.stdout.str()

    run = run_record(root, "host-isolation", "candidate")
    assert run["state"] == "complete"
    variant_dir = result_dir(root) / "groups/host-isolation/candidate"
    requests = model_requests(variant_dir)
    assert len(requests) == 2
    system = system_message(requests[0])
    # Host mode: Pi's own prompt, the declared skill, then the declared context, escaped.
    assert system.startswith("You are an expert coding assistant operating inside pi, a coding")
    assert "<name>note-taker</name>" in system
    context_file = Path(run["resources"]["context"][0]["path"]) / "house-rules.md"
    assert system.endswith(
        "\n\n<declared_context>\n"
        '<context declared-path="context/house-rules.md">\n'
        f'<file path="{context_file}">\n'
        "Compare with a &lt; b &amp; keep &lt;/file&gt; literal.\n</file>\n"
        "</context>\n</declared_context>"
    )
    sent = (variant_dir / "model-requests.jsonl").read_text(encoding="utf-8")
    for marker in (
        "planted-pi-skill",
        "planted-agents-skill",
        "PLANTED",
        "AGENT-DIR-MARKER",
        "ABOVE-ROOT-MARKER",
        "ROOT-MARKER",
        "CLAUDE-MARKER",
        CANARY,
    ):
        assert marker not in sent, marker

    # The subject's own environment, as a declared command saw it, reached the model.
    dumped = dict(
        line.split("=", 1) for line in tool_results(requests[1])[-1].splitlines() if "=" in line
    )
    assert dumped["EVAL_FLAVOUR"] == "vanilla"
    assert dumped["HOME"] != str(home)
    assert dumped["PI_CODING_AGENT_DIR"] != str(home / ".pi/agent")
    assert not {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} & set(dumped)
    assert not [k for k in dumped if k.startswith("SKILL_EVAL_")]
    assert "EVAL_FLAVOUR" in run["environment"]["names"]
    assert "OPENAI_API_KEY" not in run["environment"]["names"]
    # Neither the canary nor the scripted provider's key (a header) is in any evidence file.
    for path, data in tree_bytes(result_dir(root)):
        assert CANARY.encode() not in data, path
        assert SCRIPTED_API_KEY.encode() not in data, path


def test_isolated_mode_replaces_the_prompt_and_delivers_bom_context(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "root"
    write(root / "context" / "style.md", b"\xef\xbb\xbfPrefer short sentences & <b>bold</b>.\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="isolated-bom",
        type="description",
        turns=["Summarise the style."],
        tools=["read"],
        candidate=variant([declared], 0, ["context/style.md"]),
        scripts={"candidate": [{"text": "Short sentences."}]},
    )
    result = run_candidate(pytester, root, [group])
    assert result.ret == 0, result.stdout.str()

    run = run_record(root, "isolated-bom", "candidate")
    assert run["state"] == "complete"  # the guard accepted the manifest of a BOM file
    assert run["process"]["args"][1:3] == ["--mode", "json"]  # after the entry Node runs
    assert run["resources"]["contextDelivery"]["kind"] == "system-prompt"
    requests = model_requests(result_dir(root) / "groups/isolated-bom/candidate")
    assert len(requests) == 1
    system = system_message(requests[0])
    assert system.startswith(
        "You are an expert coding assistant operating inside pi for a skill evaluation."
    )
    assert "a coding agent harness" not in system  # Pi's own prompt is gone
    assert "Pi documentation" not in system
    assert "- read: " in system
    assert "<name>note-taker</name>" in system
    assert "\ufeff" not in system
    context_file = Path(run["resources"]["context"][0]["path"]) / "style.md"
    assert (
        f'<context declared-path="context/style.md">\n<file path="{context_file}">\n'
        "Prefer short sentences &amp; &lt;b&gt;bold&lt;/b&gt;.\n</file>\n</context>"
    ) in system
    assert system.endswith(f"</declared_context>\n\nCurrent working directory: {run['workspace']}")
