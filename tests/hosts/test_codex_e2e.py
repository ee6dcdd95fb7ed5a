"""Codex end to end: the real pinned binary against the scripted loopback server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.files import write
from tests.support.roots import Group, build, kinds_group, runtime, skill, variant
from tests.support.runs import (
    model_requests,
    result_dir,
    run_candidate,
    run_record,
    skill_eval_args,
)

pytestmark = [pytest.mark.pi, pytest.mark.codex]


def codex_runtime() -> dict[str, Any]:
    """A codex runtime profile with no bundles, session or declared environment."""
    return runtime(host="codex")


def test_where_reads_cannot_be_confined_a_codex_group_needs_the_opt_in(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Codex outside any node_modules with a bwrap, on a PATH without one: nothing can confine it.
    fake = pytester.path / "bin" / "codex"
    write(fake, "#!/bin/sh\necho codex-cli 0.171.0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    suite = build(root, [kinds_group(root, codex_runtime())])
    args = skill_eval_args(root, "--skill-eval-codex", str(fake), suite=suite)
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*does not confine reads*--skill-eval-codex-unconfined-reads*"])
    assert not (root / ".skill-eval" / "runs").exists()


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
    result = run_candidate(pytester, root, [group])
    assert result.ret == 1, result.stdout.str()
    run = run_record(root, "broken@codex", "candidate")
    assert run["state"] != "complete"
    assert "model refused the request" in json.dumps(run["process"]) + json.dumps(run["error"])
    # The provider is configured never to retry: one request, one scripted answer consumed.
    assert len(model_requests(result_dir(root) / "groups/broken@codex/candidate")) == 1


def test_every_turn_runs_in_one_app_server_and_one_thread(pytester: pytest.Pytester) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    read = {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}
    group = Group(
        id="three",
        turns=["First prompt.", "Second prompt.", "Third prompt."],
        tools=["read"],
        runtime=codex_runtime(),
        candidate=variant([skill(root, "note-taker")], 0),
        scripts={"candidate": [{"text": "One."}, read, {"text": "Two."}, {"text": "Three."}]},
    )
    result = run_candidate(pytester, root, [group])
    assert result.ret == 0, result.stdout.str()
    run = run_record(root, "three@codex", "candidate")
    assert [t["response"] for t in run["turns"]] == ["One.", "Two.", "Three."]
    args = run["process"]["args"]
    assert args[args.index("--") + 2 :] == ["app-server", "--listen", "stdio://", "--strict-config"]
    variant_dir = result_dir(root) / "groups" / "three@codex" / "candidate"
    messages = [
        json.loads(line)
        for line in (variant_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    methods = [m.get("method") for m in messages]
    # One process: one connection initialised, one thread, every turn started in it.
    assert methods.count("thread/started") == 1
    assert methods.count("turn/completed") == 3
    threads = {m["params"]["threadId"] for m in messages if m.get("method") == "turn/started"}
    assert len(threads) == 1
    assert [m["id"] for m in messages if "result" in m] == [1, 2, 3, 4, 5]
    # The thread carries what came before: the last request holds the first turn's exchange.
    last = json.dumps(model_requests(variant_dir)[-1]["body"])
    assert "First prompt." in last
    assert "One." in last


def test_a_subjects_command_cannot_write_to_the_app_servers_stdin(
    pytester: pytest.Pytester,
) -> None:
    # The app-server takes JSON-RPC on a pipe, and the subject's commands share its PID
    # namespace (it is pid 2 there): one that opened its /proc/2/fd/0 could drive it. Opening
    # it is refused to them, as for a process that made itself undumpable.
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    inject = json.dumps({"id": "planted", "method": "thread/list", "params": {}})
    command = (
        "tr '\\0' ' ' < /proc/2/cmdline; echo; "
        f"printf '%s\\n' '{inject}' > /proc/2/fd/0 && echo WROTE"
    )
    look = {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}
    group = Group(
        id="peek",
        turns=["Look around."],
        tools=["read", "write"],
        runtime=codex_runtime(),
        candidate=variant([skill(root, "note-taker")], 0),
        scripts={"candidate": [look, {"text": "Done."}]},
    )
    result = run_candidate(pytester, root, [group])
    assert result.ret == 0, result.stdout.str()
    variant_dir = result_dir(root) / "groups" / "peek@codex" / "candidate"
    told = json.dumps(model_requests(variant_dir)[-1]["body"]["input"][-1])
    assert "app-server --listen stdio://" in told  # it is there to be seen
    assert "/proc/2/fd/0: Permission denied" in told
    assert "WROTE" not in told
    events = (variant_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert not [line for line in events if line.startswith('{"id":"planted"')]
