"""Codex end to end: the real pinned binary against the scripted loopback server."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import read_json, write
from tests.support.roots import Group, build, kinds_group, runtime, skill, variant
from tests.support.runs import model_requests, result_dir, run_record, skill_eval_args

pytestmark = [pytest.mark.pi, pytest.mark.codex]

OPERATOR_KEY = "sk-proj-operator-secret-0000"


def codex_runtime() -> dict[str, Any]:
    """A codex runtime profile with no bundles, session or declared environment."""
    return runtime(host="codex")


def request_text(request: dict[str, Any]) -> str:
    """Every text of the request's input items, joined (skill listing, prompts, injections)."""
    texts = []
    for item in request["body"]["input"]:
        content = item.get("content")
        if isinstance(content, list):
            texts += [str(b.get("text", "")) for b in content if isinstance(b, dict)]
        if isinstance(item.get("output"), str):
            texts.append(item["output"])
    return "\n".join(texts)


def _netns_available() -> bool:
    """`unshare -rn` gives a network namespace with only loopback on this machine."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = ["unshare", "-rn", "sh", "-c", "ip link set lo up"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def activation_group(root: Path) -> Group:
    declared = skill(root, "changelog-keeper")
    return Group(
        id="activation",
        type="description",
        turns=["Hello there.", "Log that CSV export handles semicolons."],
        tools=["read"],
        runtime=codex_runtime(),
        candidate=variant([declared], 0),
        expectations=[
            {
                "id": "reads-skill",
                "kind": "skill-read",
                "variant": "candidate",
                "expect": "by-turn",
                "turn": 2,
            },
        ],
        scripts={
            "candidate": [
                {"text": "Hi."},
                {"tool_calls": [{"name": "skill", "arguments": {"name": "changelog-keeper"}}]},
                {
                    "tool_calls": [
                        {"name": "read", "arguments": {"path": str(root / "outside.txt")}}
                    ]
                },
                {"text": "- Handle semicolons in CSV export"},
            ]
        },
    )


def test_where_reads_cannot_be_confined_a_codex_group_needs_the_opt_in(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Codex outside any node_modules with a bwrap, on a PATH without one: nothing can confine it.
    fake = pytester.path / "bin" / "codex"
    write(fake, "#!/bin/sh\necho codex-cli 0.171.0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    root = pytester.path / "root"
    suite = build(root, [activation_group(root)])
    args = skill_eval_args(root, "--skill-eval-codex", str(fake), suite=suite)
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*does not confine reads*--skill-eval-codex-unconfined-reads*"])
    assert not (root / ".skill-eval" / "runs").exists()


def test_activation_by_turn_isolation_and_loopback_only(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator_home = pytester.path / "operator-home"
    write(
        operator_home / ".codex" / "skills" / "operator-only-skill" / "SKILL.md",
        "---\nname: operator-only-skill\ndescription: Must stay invisible.\n---\nx\n",
    )
    write(operator_home / ".codex" / "config.toml", 'model = "operator-model"\n')
    write(
        operator_home / ".agents" / "skills" / "agents-only-skill" / "SKILL.md",
        "---\nname: agents-only-skill\ndescription: Must stay invisible.\n---\nx\n",
    )
    monkeypatch.setenv("HOME", str(operator_home))
    monkeypatch.setenv("CODEX_HOME", str(operator_home / ".codex"))
    monkeypatch.setenv("OPENAI_API_KEY", OPERATOR_KEY)
    root = pytester.path / "root"
    write(root / "outside.txt", "not for the subject\n")
    write(root / "AGENTS.md", "Operator instructions above the workspace.\n")
    suite = build(root, [activation_group(root)])
    # No opt-in: this machine can confine Codex's reads, so none is needed.
    args = skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    netns = _netns_available()
    if netns:
        # Only loopback exists in this namespace: any other connection attempt fails.
        inner = shlex.join([sys.executable, "-m", "pytest", *args])
        command = ["unshare", "-rn", "sh", "-c", f"ip link set lo up && exec {inner}"]
        result = pytester.run(*command, timeout=120)
    else:
        result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()

    run = run_record(root, "activation@codex", "candidate")
    assert run["state"] == "complete", run["error"]
    assert run["process"]["host"] == "codex"
    assert run["binary"]["version"] == "0.171.0"
    assert run["binary"]["enforced"]["sandbox"] == "read-only"
    assert "mount namespace" in run["binary"]["enforced"]["reads"]
    # Both turns ran the native binary itself (inside the mount namespace), never Node's
    # launcher, with what the launcher would have given it.
    args = run["process"]["args"]
    assert args[args.index("--") + 1].endswith("/x86_64-unknown-linux-musl/bin/codex")
    assert {"CODEX_MANAGED_PACKAGE_ROOT", "CODEX_MANAGED_BY_NPM"} <= set(
        run["environment"]["names"]
    )
    target = run["resources"]["targetPath"]
    assert run["activation"]["readTurns"] == [2]
    assert target in run["activation"]["successfulReadPaths"]
    first, second = run["turns"]
    assert first["response"] == "Hi."
    assert [a["toolName"] for a in second["toolActivity"]] == ["exec_command", "exec_command"]
    assert run["response"] == "- Handle semicolons in CSV export"
    # The read outside the workspace and declared resources failed: it is not there for Codex.
    assert second["toolActivity"][1]["isError"] is True
    assert str(root / "outside.txt") not in run["successfulReadPaths"]
    assert "1 passed" in result.stdout.str() or "passed" in result.stdout.str()

    requests = model_requests(result_dir(root) / "groups/activation@codex/candidate")
    assert len(requests) == 4
    listing = request_text(requests[0])
    assert "- changelog-keeper:" in listing
    assert "operator-only-skill" not in listing
    assert "agents-only-skill" not in listing
    assert "Operator instructions above the workspace" not in listing
    assert requests[0]["body"]["model"] == "gpt-5.5"
    # Turn two resumed the thread: its first request carries turn one.
    assert "Hello there." in request_text(requests[1])
    for path in result_dir(root).rglob("*"):
        if path.is_file():
            assert OPERATOR_KEY.encode() not in path.read_bytes(), path


def test_body_delivers_the_target_on_turn_one_and_writes_and_edits(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\nbeta\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="body-write",
        type="body",
        turns=["Tidy the notes."],
        tools=["read", "write", "edit"],
        fixture="fixture",
        runtime=codex_runtime(),
        candidate=variant([declared], 0),
        expectations=[
            {
                "id": "read-tool",
                "kind": "tool-call",
                "variant": "candidate",
                "tool": "read",
                "expect": "called",
            },
            {
                "id": "patched",
                "kind": "tool-call",
                "variant": "candidate",
                "tool": "apply_patch",
                "expect": "succeeded",
            },
        ],
        scripts={
            "candidate": [
                {
                    "tool_calls": [
                        {
                            "name": "edit",
                            "arguments": {
                                "path": "notes.txt",
                                "edits": [{"oldText": "beta", "newText": "gamma"}],
                            },
                        }
                    ]
                },
                {
                    "tool_calls": [
                        {"name": "write", "arguments": {"path": "out/report.md", "content": "ok\n"}}
                    ]
                },
                {"text": "Tidied."},
            ]
        },
    )
    suite = build(root, [group])
    result = pytester.runpytest_subprocess(
        *skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    )
    assert result.ret == 0, result.stdout.str()

    run = run_record(root, "body-write@codex", "candidate")
    assert run["state"] == "complete", run["error"]
    assert run["binary"]["enforced"]["sandbox"] == "workspace-write"
    assert run["delivery"]["kind"] == "explicit-skill-mention"
    assert run["delivery"]["mention"] == "$note-taker"
    assert run["turns"][0]["deliveredPrompt"] == "$note-taker Tidy the notes."
    assert run["response"] == "Tidied."
    names = [(a["toolName"], a["isError"]) for a in run["turns"][0]["toolActivity"]]
    assert names == [("apply_patch", False), ("apply_patch", False)]
    workspace = Path(run["workspace"])
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "alpha\ngamma\n"
    assert (workspace / "out" / "report.md").read_text(encoding="utf-8") == "ok\n"
    changed = json.dumps(run["effects"]["changes"])
    assert "out/report.md" in changed
    assert ".codex" not in changed
    assert ".agents" not in changed

    requests = model_requests(result_dir(root) / "groups/body-write@codex/candidate")
    assert "<name>note-taker</name>" in request_text(requests[0])
    grade = read_json(result_dir(root) / "groups/body-write@codex/deterministic-grade.json")
    checks = {c["id"]: c for c in grade["checks"]}
    assert checks["patched"]["state"] == "pass"
    # Codex has no read tool: the check says why it has no observation instead of failing.
    assert checks["read-tool"]["state"] == "unavailable"
    assert "no read tool" in checks["read-tool"]["observed"]["reason"]


def test_a_model_error_fails_the_turn_once_without_retries(pytester: pytest.Pytester) -> None:
    root = pytester.path / "root"
    group = Group(
        id="broken",
        type="description",
        turns=["Hello."],
        tools=["read"],
        runtime=codex_runtime(),
        candidate=variant([skill(root, "changelog-keeper")], 0),
        scripts={"candidate": [{"error": {"status": 400, "message": "model refused the request"}}]},
    )
    suite = build(root, [group])
    result = pytester.runpytest_subprocess(
        *skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    )
    assert result.ret == 1, result.stdout.str()
    run = run_record(root, "broken@codex", "candidate")
    assert run["state"] != "complete"
    assert "model refused the request" in json.dumps(run["process"]) + json.dumps(run["error"])
    # The provider is configured never to retry: one request, one scripted answer consumed.
    assert len(model_requests(result_dir(root) / "groups/broken@codex/candidate")) == 1


@pytest.mark.parametrize("mode", ["isolated", "host"])
def test_declared_context_reaches_the_model_in_both_prompt_modes(
    pytester: pytest.Pytester, mode: str
) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    write(root / "context" / "style.md", "Always write CONTEXT-MARKER-7 in replies.\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="context",
        type="body",
        turns=["Tidy the notes."],
        tools=["read"],
        fixture="fixture",
        runtime={**codex_runtime(), "prompt": mode},
        candidate=variant([declared], 0, context=["context/style.md"]),
        expectations=[
            {
                "id": "context-seen",
                "kind": "context-text",
                "variant": "candidate",
                "value": "CONTEXT-MARKER-7",
                "expect": "contains",
            },
        ],
        scripts={"candidate": [{"text": "Tidied."}]},
    )
    suite = build(root, [group])
    result = pytester.runpytest_subprocess(
        *skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    )
    assert result.ret == 0, result.stdout.str()
    requests = model_requests(result_dir(root) / "groups/context@codex/candidate")
    instructions = requests[0]["body"].get("instructions") or ""
    developer = "\n".join(
        str(block.get("text", ""))
        for item in requests[0]["body"]["input"]
        if item.get("role") == "developer"
        for block in item.get("content", [])
    )
    if mode == "isolated":
        # The evaluator's instructions replace Codex's own, the declared context after them.
        assert "skill evaluation" in instructions + developer
    assert "CONTEXT-MARKER-7" in instructions + developer
    grade = read_json(result_dir(root) / "groups/context@codex/deterministic-grade.json")
    (check,) = grade["checks"]
    assert check["state"] == "pass", check


def test_resource_read_path_and_json_on_codex(pytester: pytest.Pytester) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    group = kinds_group(root, codex_runtime())
    suite = build(root, [group])
    result = pytester.runpytest_subprocess(
        *skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    )
    assert result.ret == 0, result.stdout.str()
    grade = read_json(result_dir(root) / "groups/kinds@codex/deterministic-grade.json")
    assert {c["id"]: c["state"] for c in grade["checks"]} == {
        "read-guide": "pass",
        "wrote": "pass",
        "status": "pass",
    }
