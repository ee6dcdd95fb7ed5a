"""pytest without --skill-eval, where definitions are at hand, says how to evaluate them."""

from __future__ import annotations

import json

import pytest

SUITE = {"schema_version": 1, "kind": "suite", "id": "s", "groups": ["g.json"]}


def test_definitions_in_the_invocation_directory_are_named(pytester: pytest.Pytester) -> None:
    pytester.makefile(".json", suite=json.dumps(SUITE), other=json.dumps({"kind": "other"}))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "skill-eval: nothing evaluated; to evaluate suite.json, run: "
            "pytest --skill-eval suite.json"
        ]
    )


def test_skill_eval_ini_keys_without_definitions_are_named(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nskill_eval_trials = 2\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "skill-eval: nothing evaluated: *tox.ini sets skill_eval_trials but names no "
            "definitions; run pytest --skill-eval <file>*"
        ]
    )


def test_a_loop_features_own_ini_key_without_definitions_is_named(
    pytester: pytest.Pytester,
) -> None:
    # The no-harm gate declares its margin itself (`features/no_harm.py`), not `options/`.
    pytester.makeini("[pytest]\nskill_eval_margin = 0.1\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["skill-eval: nothing evaluated: *tox.ini sets skill_eval_margin but names no definitions*"]
    )


def test_without_definitions_nothing_is_said(pytester: pytest.Pytester) -> None:
    pytester.makefile(".json", data=json.dumps({"kind": "suite-ish"}))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert "nothing evaluated" not in result.stdout.str()
