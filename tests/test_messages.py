"""Every message the plugin and CLI give for a user mistake names the file or option, the
value, and a fix. Each row: how to trigger the mistake (a function of a fresh directory that
returns the output), and the substrings the message must hold."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.files import write
from tests.support.roots import body_group, make_root, variant, write_answer, write_script
from tests.support.runs import skill_eval_args

Trigger = Callable[[pytest.Pytester, Path], str]


def _collect(pytester: pytest.Pytester, root: Path, *extra: str) -> str:
    result = pytester.runpytest_inprocess(*skill_eval_args(root, "--collect-only", "-q", *extra))
    return result.stdout.str()


def _root(path: Path, **overrides: object) -> Path:
    scripts = {"answer/baseline": write_answer("no"), "answer/candidate": write_answer("yes")}
    return make_root(path, [body_group("answer", **overrides)], scripts)


# --- static (items 1, 2, 3) ---


def _missing_skill(pytester: pytest.Pytester, tmp: Path) -> str:
    chosen = variant(["skills/commit-msg"], target=0)
    root = _root(tmp / "root", variants={"baseline": variant(), "candidate": chosen})
    return _collect(pytester, root)


def _missing_script(pytester: pytest.Pytester, tmp: Path) -> str:
    root = _root(tmp / "root")
    (root / "scripts" / "answer" / "candidate.yaml").unlink()
    return _collect(pytester, root)


def _unknown_script_key(pytester: pytest.Pytester, tmp: Path) -> str:
    root = _root(tmp / "root")
    write(
        root / "scripts" / "answer" / "candidate.yaml",
        "version: 1\ninteractions:\n  - respones: {}\n",
    )
    return _collect(pytester, root)


def _wrong_tool_argument(pytester: pytest.Pytester, tmp: Path) -> str:
    root = _root(tmp / "root")
    wrong = {"name": "write", "arguments": {"file": "answer.txt", "content": "yes"}}
    write_script(
        root / "scripts" / "answer" / "candidate.yaml", [{"response": {"tool_calls": [wrong]}}]
    )
    return _collect(pytester, root)


STATIC_CASES = [
    pytest.param(
        _missing_skill,
        ["answer.json", "/variants/candidate/skills/0", "skills/commit-msg", "--skill-eval-root"],
        id="static-missing-skill",
    ),
    pytest.param(
        _missing_script,
        ["candidate.yaml", "no script for group 'answer' candidate", "--skill-eval-record once"],
        id="static-missing-script",
    ),
    pytest.param(
        _unknown_script_key,
        ["candidate.yaml", "line 3", "'respones'", "did you mean 'response'?"],
        id="static-unknown-script-key",
    ),
    pytest.param(
        _wrong_tool_argument,
        ["candidate.yaml", "interaction 1", "'file'", "write takes {path, content}"],
        id="static-wrong-tool-argument",
    ),
]
# --- end static ---

CASES = [*STATIC_CASES]


@pytest.mark.parametrize(("trigger", "expected"), CASES)
def test_a_user_mistake_names_the_place_the_value_and_a_fix(
    pytester: pytest.Pytester, tmp_path: Path, trigger: Trigger, expected: list[str]
) -> None:
    output = trigger(pytester, tmp_path)
    assert "Traceback" not in output
    for text in expected:
        assert text in output, (text, output)
