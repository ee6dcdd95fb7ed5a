"""Everything static is checked at collection: declared resources, the scripts the selected
items will be answered from, and the arguments of scripted neutral tool calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.views.text import render_text
from tests.support.files import write
from tests.support.git import run_git
from tests.support.roots import (
    answers_root,
    body_group,
    make_root,
    runtime,
    variant,
    write_answer,
    write_script,
)
from tests.support.runs import result_dir, run, skill_eval_args


def _root(path: Path, **overrides: Any) -> Path:
    return make_root(
        path,
        [body_group("answer", **overrides)],
        {"answer/baseline": write_answer("no"), "answer/candidate": write_answer("yes")},
    )


def _collect(pytester: pytest.Pytester, root: Path, *extra: str) -> pytest.RunResult:
    __tracebackhide__ = True
    return pytester.runpytest_inprocess(*skill_eval_args(root, "--collect-only", "-q", *extra))


def _refused(result: pytest.RunResult, *expected: str) -> str:
    """The collection error's text, after asserting it is one, without a traceback."""
    __tracebackhide__ = True
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert "Traceback" not in output
    for text in expected:
        assert text in output, (text, output)
    return output


# -- item 1: every declared resource -----------------------------------------------------------


def test_a_missing_skill_is_a_collection_error_with_its_pointer_and_fix(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    missing = variant(["skills/commit-msg"], target=0)
    root = _root(tmp_path / "root", variants={"baseline": variant(), "candidate": missing})

    result = _collect(pytester, root)

    group_file = root / "groups" / "answer.json"
    _refused(
        result,
        f"{group_file}: /variants/candidate/skills/0: declared skill skills/commit-msg does not "
        "exist under the definition root",
        "--skill-eval-root",
    )


def test_a_skill_without_skill_md_and_a_missing_context_file_are_collection_errors(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    chosen = variant(["skills/empty"], target=0, context=["notes/AGENTS.md"])
    root = _root(tmp_path / "root", variants={"baseline": variant(), "candidate": chosen})
    (root / "skills" / "empty").mkdir()

    output = _refused(_collect(pytester, root), "/variants/candidate/skills/0: declared skill "
                      "skills/empty has no SKILL.md; add one")  # fmt: skip

    assert "/variants/candidate/context/0: declared context notes/AGENTS.md does not exist" in (
        output
    )


def test_a_missing_runtime_bundle_resource_is_a_collection_error(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    bundle = {"entry": "ext/tool.mjs", "resources": ["ext"]}
    root = _root(tmp_path / "root", runtime={**runtime(), "extensions": [bundle]})

    _refused(
        _collect(pytester, root),
        "/runtime/extensions/0/resources/0: declared bundle ext does not exist",
    )


def test_an_unresolvable_git_ref_and_a_path_missing_from_the_commit_are_collection_errors(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root")
    run_git(root, "init", "-q")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "suite")
    group = json.loads((root / "groups" / "answer.json").read_text())
    from_git = {**variant(["skills/answer-writer"], target=0), "source": {"kind": "git",
                "ref": "no-such-ref"}}  # fmt: skip
    group["variants"]["candidate"] = from_git
    group["variants"]["baseline"] = {**variant(["skills/later", "fixture"], target=0),
                                     "source": {"kind": "git", "ref": "HEAD"}}  # fmt: skip
    write(root / "groups" / "answer.json", json.dumps(group))

    output = _refused(
        _collect(pytester, root),
        "/variants/candidate/source/ref: Git ref 'no-such-ref' does not resolve to a commit",
    )

    assert "/variants/baseline/skills/0: declared skill skills/later is missing from Git " in (
        output
    )
    assert "/variants/baseline/skills/1: declared skill fixture has no SKILL.md in Git " in output


# -- item 2: every script a selected item will use ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "version: 1\ninteractions:\n  - respones: {text: hi}\n",
            "line 3 (interactions[0].respones): 'respones' is not a known key "
            "(did you mean 'response'?)",
            id="unknown-key",
        ),
        pytest.param(
            "version: 2\ninteractions:\n  - response: {text: hi}\n",
            "line 1 (version): must be 1, got 2",
            id="version",
        ),
        pytest.param(
            "version: 1\ninteractions: [\n", "line 3, column 1: is not valid YAML", id="yaml"
        ),
    ],
)
def test_an_invalid_script_is_a_collection_error_naming_the_script(
    pytester: pytest.Pytester, tmp_path: Path, text: str, expected: str
) -> None:
    root = _root(tmp_path / "root")
    script = write(root / "scripts" / "answer" / "candidate.yaml", text)

    _refused(_collect(pytester, root), f"{script}: ", expected, "(group 'answer')")


def test_a_missing_script_is_a_collection_error_when_replaying_not_when_recording(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root")
    script = root / "scripts" / "answer" / "candidate.yaml"
    script.unlink()

    _refused(
        _collect(pytester, root),
        f"{script}: no script for group 'answer' candidate trial 1 (host pi)",
        "--skill-eval-record once",
    )
    recording = _collect(pytester, root, "--skill-eval-record", "once")
    assert recording.ret == pytest.ExitCode.OK, recording.stdout.str()
    # Recording `once` appends to an existing cassette: that one must be valid.
    write(script, "version: 1\ninteractions: []\n")
    _refused(
        _collect(pytester, root, "--skill-eval-record", "once"),
        f"{script}: line 2 (interactions): must be a non-empty list",
    )


def test_only_the_selected_items_scripts_are_checked(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root")
    write(root / "scripts" / "answer" / "candidate.yaml", "version: 2\n")

    result = _collect(pytester, root, "--skill-eval-variant", "baseline")

    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


# -- item 3: the arguments of scripted neutral tool calls --------------------------------------


def test_a_neutral_tool_call_with_a_wrong_argument_is_a_collection_warning(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root")
    script = root / "scripts" / "answer" / "candidate.yaml"
    wrong = {"name": "write", "arguments": {"file": "answer.txt", "content": "yes"}}
    write_script(script, [{"response": {"tool_calls": [wrong]}}, write_answer("yes")[1]])

    result = _collect(pytester, root)

    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*warnings summary*",
            f"*ToolArgumentWarning: {script}: interaction 1 calls 'write' with unknown argument "
            "'file'; write takes {path, content}*",
        ]
    )
    assert "baseline.yaml: interaction" not in result.stdout.str()


# -- item 3: a tool error the host reported is shown -------------------------------------------


@pytest.mark.codex
def test_a_tool_error_the_host_reported_is_in_the_failure_detail_and_the_text_view(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = answers_root(tmp_path / "root", {"answer/baseline": "no", "answer/candidate": "yes"})
    failing = {"name": "read", "arguments": {"path": "no-such-file.txt"}}
    write_script(
        root / "scripts" / "answer" / "candidate.yaml",
        [{"response": {"tool_calls": [failing]}}, write_answer("yes")[1]],
    )

    result = run(pytester, root, "--skill-eval-fail-on", "any")

    result.stdout.fnmatch_lines(
        [
            "*check candidate-says-yes (file-text, candidate): fail",
            "*candidate tool error: *no-such-file.txt: No such file or directory*",
        ]
    )
    # The summary says it too, whatever the fail-on policy makes of the check.
    result.stdout.fnmatch_lines(
        [
            "  group answer@codex *",
            "    candidate tool-error: *no-such-file.txt: No such file or directory",
        ]
    )
    text = render_text(result_dir(root))
    assert "  tool-error: " in text
    assert "no-such-file.txt: No such file or directory" in text
