"""Exact inputs end to end: Git revisions, pinned refs, immutable snapshots, verify."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import main as cli_main
from tests.support.files import read_json
from tests.support.roots import SKILL, body_group, fast_dir, make_root, on_fast_host, write_answer
from tests.support.runs import results, run

pytestmark = pytest.mark.pi


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _revision_root(tmp_path: Path, **group: object) -> tuple[Path, str]:
    """A Git repository whose skill was committed and tagged v1, then edited (v2) in place."""
    root = make_root(
        tmp_path / "root",
        [body_group("revision", **group)],
        {"revision/baseline": write_answer("yes"), "revision/candidate": write_answer("yes")},
    )
    (root / ".gitignore").write_text(".skill-eval/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "v1")
    _git(root, "tag", "v1")
    (root / "skills" / "answer-writer" / "SKILL.md").write_text(SKILL + "\nVersion two.\n")
    return root, _git(root, "rev-parse", "v1^{commit}")


def _variants(ref: str) -> dict[str, object]:
    skill = {"skills": ["skills/answer-writer"], "target": 0, "context": []}
    return {
        "baseline": {"source": {"kind": "git", "ref": ref}, **skill},
        "candidate": {"source": {"kind": "working-tree"}, **skill},
    }


@pytest.mark.codex
def test_revision_group_takes_baseline_from_a_tag_and_candidate_from_the_tree(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # Sources are resolved before any host starts: the fastest one will do.
    root, v1 = _revision_root(tmp_path, variants=_variants("v1"), **on_fast_host())
    result = run(pytester, root)
    assert result.ret == 0, result.stdout.str()
    group = results(root)[-1] / "groups" / fast_dir("revision")
    baseline = read_json(group / "baseline" / "run.json")
    candidate = read_json(group / "candidate" / "run.json")
    assert baseline["resources"]["source"]["kind"] == "git"
    assert baseline["resources"]["source"]["commit"] == v1
    assert baseline["resources"]["skills"][0]["sourcePath"] == f"{v1}:skills/answer-writer"
    assert candidate["resources"]["source"]["kind"] == "working-tree"
    old = (
        group / "baseline" / "resources" / "skills" / "0" / "answer-writer" / "SKILL.md"
    ).read_text()
    new = (
        group / "candidate" / "resources" / "skills" / "0" / "answer-writer" / "SKILL.md"
    ).read_text()
    assert old == SKILL
    assert new == SKILL + "\nVersion two.\n"
    assert (
        baseline["resources"]["skills"][0]["sha256"]
        != candidate["resources"]["skills"][0]["sha256"]
    )
    invocation = read_json(results(root)[-1] / "invocation.json")
    assert invocation["pins"] == {"v1": v1}


def test_a_branch_moved_during_the_invocation_does_not_change_later_trials(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    move = [
        "git", "-C", str(tmp_path / "root"), "-c", "user.name=t", "-c",
        "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "moved",
    ]  # fmt: skip
    root, v1 = _revision_root(
        tmp_path,
        variants=_variants("main"),
        tools=["read", "write", "edit", "run_command"],
        commands=[{"id": "move-branch", "argv": move}],
    )
    moving = [
        {
            "response": {
                "tool_calls": [{"name": "run_command", "arguments": {"command": "move-branch"}}]
            }
        },
        *write_answer("yes"),
    ]
    import yaml

    (root / "scripts" / "revision" / "candidate.yaml").write_text(
        yaml.safe_dump({"version": 1, "interactions": moving})
    )
    result = run(pytester, root, "--skill-eval-trials", "2")
    assert result.ret == 0, result.stdout.str()
    moved = _git(root, "rev-parse", "main")
    assert moved != v1, "the first trial's candidate moved the branch"
    trial_dirs = results(root)
    assert len(trial_dirs) == 2
    for trial_dir in trial_dirs:
        baseline = read_json(trial_dir / "groups" / "revision" / "baseline" / "run.json")
        assert baseline["resources"]["source"]["commit"] == v1
        assert read_json(trial_dir / "invocation.json")["pins"] == {"main": v1}


TAMPER = """import { appendFileSync } from "node:fs";

export default function (pi) {
  pi.registerTool({
    name: "tamper",
    label: "Tamper",
    description: "Append to a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    async execute(id, params) {
      appendFileSync(params.path, "\\ntampered\\n");
      return { content: [{ type: "text", text: "ok" }], details: {} };
    },
  });
}
"""


def test_a_subject_that_changes_a_skill_snapshot_is_caught(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    runtime = {
        "host": "pi",
        "session": False,
        "extensions": [
            {"entry": "extensions/tamper/tamper.mjs", "resources": ["extensions/tamper"]}
        ],
        "environment": {"literal": {}, "inherit": []},
    }
    root = make_root(
        tmp_path / "root",
        [body_group("tamper", tools=["read", "tamper"], runtime=runtime)],
        {
            "tamper/baseline": [{"response": {"text": "nothing to do"}}],
            "tamper/candidate": [
                {
                    "response": {
                        "tool_calls": [
                            {"name": "tamper", "arguments": {"path": "{{skill:0}}/SKILL.md"}}
                        ]
                    }
                },
                {"response": {"text": "done"}},
            ],
        },
    )
    (root / "extensions" / "tamper").mkdir(parents=True)
    (root / "extensions" / "tamper" / "tamper.mjs").write_text(TAMPER)
    result = run(pytester, root)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*candidate run is infrastructure-failed*immutable*"])
    group = results(root)[-1] / "groups" / "tamper"
    candidate = read_json(group / "candidate" / "run.json")
    assert candidate["state"] == "infrastructure-failed"
    reasons = [e["reason"] for e in candidate["process"]["protocolErrors"]]
    assert "immutable-resource-changed" in reasons
    # Everything the subject did is still on record.
    assert candidate["turns"][0]["toolActivity"][0]["toolName"] == "tamper"
    assert read_json(group / "candidate" / "transcript.json")
    assert read_json(group / "baseline" / "run.json")["state"] == "complete"


@pytest.mark.codex
def test_verify_passes_on_a_fresh_result_and_names_a_changed_byte(
    pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_root(
        tmp_path / "root",
        [body_group("answer", **on_fast_host())],  # verify reads evidence only
        {"answer/baseline": write_answer("no"), "answer/candidate": write_answer("yes")},
    )
    assert run(pytester, root).ret == 0
    result_dir = results(root)[-1]
    assert cli_main(["verify", str(result_dir)]) == 0
    group = result_dir / "groups" / fast_dir("answer")
    target = group / "candidate" / "workspace" / "answer.txt"
    target.write_bytes(b"yeS")
    capsys.readouterr()
    assert cli_main(["verify", str(result_dir)]) == 1
    assert capsys.readouterr().out.splitlines() == [f"changed: {target}"]
    assert cli_main(["--root", str(root), "verify", result_dir.name]) == 1
