"""Every message the plugin and CLI give for a user mistake names the file or option, echoes the
value, and says how to fix it. Each row: how to trigger the message (a callable given a fresh
directory, returning what the user reads), and the substrings it must hold."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from pytest_skill_eval import cli
from pytest_skill_eval.credentials import MissingCredentialsError, refuse_live_without_credentials
from pytest_skill_eval.definitions import Group
from pytest_skill_eval.evidence import layout
from tests.support.roots import body_group

Trigger = Callable[[Path], str]


def _cli(*argv: str) -> Trigger:
    """Run `skill-eval ARGV` (`{dir}` is the fresh directory) and return what it wrote to stderr."""

    def run(directory: Path) -> str:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            cli.main([a.replace("{dir}", str(directory)) for a in argv])
        return err.getvalue()

    return run


def _aggregate(*argv: str) -> Trigger:
    """`_cli` on a directory holding an aggregate record."""

    def run(directory: Path) -> str:
        (directory / layout.AGGREGATE).write_text("{}", encoding="utf-8")
        return _cli(*argv)(directory)

    return run


def _live_without_credentials(directory: Path) -> str:
    group = Group.model_validate(
        body_group("answer", model={"model": "anthropic/claude-sonnet-4-5"}, expectations=[])
    )
    with pytest.raises(MissingCredentialsError) as raised:
        refuse_live_without_credentials([group], {}, None)
    return str(raised.value)


HASH = "sha256:" + "0" * 64

CASES: list[object] = [
    # --- runtime: credentials, verify of an aggregate, one name per meaning (items 4, 5, 9) ---
    pytest.param(
        _cli("verify", "{dir}", "--seal", "abc"),
        ["--seal", "'abc'", "sha256:<64 hex digits>"],
        id="verify-seal-not-a-hash",
    ),
    pytest.param(
        _aggregate("verify", "{dir}", "--seal", HASH),
        ["--seal", "{dir}", "is an aggregate", "verify a trial with --seal"],
        id="verify-seal-on-an-aggregate",
    ),
    pytest.param(
        _cli("verify", "{dir}", "--root", HASH),
        ["verify --root HASH", "deprecated", "use `verify --seal HASH`"],
        id="verify-root-hash-deprecated",
    ),
    pytest.param(
        _live_without_credentials,
        [
            "--skill-eval-cassettes DIR",
            "group 'answer'",
            "anthropic/claude-sonnet-4-5",
            "name ANTHROPIC_API_KEY in runtime.environment.inherit",
            "skill_eval_pi_auth",
        ],
        id="live-run-without-credentials",
    ),
    # --- end runtime ---
]


@pytest.mark.parametrize(("trigger", "expected"), CASES)
def test_a_user_mistake_names_the_file_or_option_the_value_and_a_fix(
    trigger: Trigger, expected: Sequence[str], tmp_path: Path
) -> None:
    message = trigger(tmp_path)
    assert "Traceback" not in message
    for part in expected:
        assert part.replace("{dir}", str(tmp_path)) in message, message
