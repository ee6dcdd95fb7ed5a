"""The example suite on all three hosts, planned, run as two shards and merged with both shard
roots bound: `skill-eval verify --seal` with the merged root the merge printed proves the
chain, and a wrong root fails."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from tests.support.files import read_json
from tests.support.paths import EXAMPLE
from tests.support.runs import run_detached

pytestmark = [pytest.mark.pi, pytest.mark.claude, pytest.mark.codex]

HOSTS = ("pi", "claude-code", "codex")
SHARD_LINE = re.compile(r"^shard (\d)/2: \S+ seal sha256:([0-9a-f]{64})$", re.M)
MERGED_LINE = re.compile(r"^merged: (\S+) seal sha256:([0-9a-f]{64})$", re.M)


def test_the_example_on_three_hosts_as_two_bound_shards_verifies_by_its_merged_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "source"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns(".skill-eval"))
    plan = tmp_path / "plan.json"
    argv = ["plan", str(source / "suite.json"), "--root", str(source), "-o", str(plan)]
    argv += ["--cassettes", str(source / "scripts")]
    assert skill_eval([*argv, *(a for h in HOSTS for a in ("--host", h))]) == 0
    roots: dict[int, str] = {}
    for k in (1, 2):
        machine = tmp_path / f"machine{k}"
        shutil.copytree(source, machine)
        done = run_detached(
            machine, "--skill-eval-plan", str(plan), "--skill-eval-shard", f"{k}/2",
            *(a for h in HOSTS for a in ("--skill-eval-host", h)),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        ((index, root),) = SHARD_LINE.findall(done.stdout)  # what the CI log shows
        roots[int(index)] = root
    roots_file = tmp_path / "roots.txt"
    roots_file.write_text(f"2=sha256:{roots[2]}\n", encoding="utf-8")
    shards = [str(tmp_path / f"machine{k}" / ".skill-eval" / "runs") for k in (1, 2)]
    out = tmp_path / "merged"
    capsys.readouterr()
    bind = ["--shard-root", f"1=sha256:{roots[1]}", "--shard-roots", str(roots_file)]
    assert skill_eval(["merge", str(plan), *shards, "-o", str(out), *bind]) == 0
    ((result, merged_root),) = MERGED_LINE.findall(capsys.readouterr().out)
    summary = read_json(Path(result) / "summary.json")
    assert summary["state"] == "complete"
    assert sorted((g["id"], g.get("host", "pi")) for g in summary["groups"]) == sorted(
        (g, h) for g in ("natural-activation", "changelog-entry") for h in HOSTS
    )
    sealed = read_json(Path(result) / "seal.json")["shards"]
    assert [(s["index"], s["root"], s["bound"]) for s in sealed] == [
        (1, roots[1], True),
        (2, roots[2], True),
    ]
    assert skill_eval(["verify", result, "--seal", f"sha256:{merged_root}"]) == 0
    wrong = f"sha256:{'f' * 64}"
    capsys.readouterr()
    assert skill_eval(["verify", result, "--seal", wrong]) == 1
    assert f"not the expected {wrong}" in capsys.readouterr().out
