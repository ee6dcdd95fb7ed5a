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
