"""Collection: items per group × variant × trial, -k selection, clear definition errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.runs import skill_eval_args


def _collect(pytester: pytest.Pytester, root: Path, *extra: str) -> pytest.RunResult:
    __tracebackhide__ = True
    return pytester.runpytest_inprocess(
        "--collect-only", "-q", *skill_eval_args(root, *extra, cassettes=False)
    )


def _items(result: pytest.RunResult) -> list[str]:
    return [line.split("::", 1)[1] for line in result.outlines if "::" in line]


def test_collect_only_lists_group_by_variant_items(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    result = _collect(pytester, example_root)
    assert result.ret == 0
    assert _items(result) == [
        "natural-activation[baseline]",
        "natural-activation[candidate]",
        "changelog-entry[baseline]",
        "changelog-entry[candidate]",
    ]
    assert not (example_root / ".skill-eval").exists()  # collecting writes no evidence


def test_trials_multiply_items_and_k_selects_group_variant_and_trial(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    result = _collect(pytester, example_root, "--skill-eval-trials", "3")
    assert len(_items(result)) == 12
    assert "changelog-entry[candidate-trial3]" in _items(result)
    by_group = _collect(pytester, example_root, "-k", "changelog-entry")
    assert _items(by_group) == ["changelog-entry[baseline]", "changelog-entry[candidate]"]
    by_variant = _collect(pytester, example_root, "-k", "candidate")
    assert _items(by_variant) == ["natural-activation[candidate]", "changelog-entry[candidate]"]
    by_trial = _collect(
        pytester, example_root, "--skill-eval-trials", "3", "-k", "trial2 and baseline"
    )
    assert _items(by_trial) == [
        "natural-activation[baseline-trial2]",
        "changelog-entry[baseline-trial2]",
    ]


def test_selectors_narrow_collection(pytester: pytest.Pytester, example_root: Path) -> None:
    result = _collect(
        pytester, example_root, "--skill-eval-group", "2", "--skill-eval-variant", "baseline"
    )
    assert _items(result) == ["changelog-entry[baseline]"]
    unknown = _collect(pytester, example_root, "--skill-eval-group", "nope")
    assert unknown.ret != 0
    unknown.stdout.fnmatch_lines(["*unknown group selector*nope*"])


def test_group_selector_is_repeatable_in_suite_order(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    both = ["natural-activation[baseline]", "changelog-entry[baseline]"]
    args = ("--skill-eval-variant", "baseline")
    result = _collect(pytester, example_root, "--skill-eval-group", "2", "--skill-eval-group",
                      "natural-activation", *args)  # fmt: skip
    assert _items(result) == both
    unknown = _collect(pytester, example_root, "--skill-eval-group", "1", "--skill-eval-group",
                       "nope")  # fmt: skip
    assert unknown.ret != 0
    assert _items(unknown) == []
    unknown.stdout.fnmatch_lines(["*unknown group selector 'nope'*"])
    assert "Traceback" not in unknown.stdout.str()


def test_group_ini_key_still_selects(pytester: pytest.Pytester, example_root: Path) -> None:
    pytester.makeini("[pytest]\nskill_eval_group = changelog-entry\n")
    result = _collect(pytester, example_root, "--skill-eval-variant", "candidate")
    assert _items(result) == ["changelog-entry[candidate]"]


def test_without_the_option_the_plugin_collects_nothing(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "skill-eval" not in result.stdout.str()


def test_a_bad_definition_is_one_clear_collection_error(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    group_file = example_root / "groups" / "changelog-entry.json"
    data = json.loads(group_file.read_text())
    data["expectations"][0]["turn"] = 4
    group_file.write_text(json.dumps(data))
    result = _collect(pytester, example_root)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    output = result.stdout.str()
    assert f"{group_file}: /expectations/0/turn:" in output
    assert "Traceback" not in output
    assert "pydantic" not in output


def test_json_syntax_errors_name_line_and_column(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    (example_root / "groups" / "natural-activation.json").write_text(
        '{\n  "schema_version": 1,,\n}'
    )
    result = _collect(pytester, example_root)
    result.stdout.fnmatch_lines(["*natural-activation.json*line 2*column*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        (
            "--skill-eval-fail-on",
            "sometimes",
            '--skill-eval-fail-on "sometimes" is not accepted; use one of',
        ),
        ("--skill-eval-trials", "0", '--skill-eval-trials "0" is not accepted; use a positive'),
        ("--skill-eval-variant", "both", '--skill-eval-variant "both" is not accepted; use one of'),
        ("--skill-eval-max-cost", "-1", '--skill-eval-max-cost "-1" is not accepted; use a number'),
    ],
)
def test_bad_options_are_usage_errors(
    pytester: pytest.Pytester, example_root: Path, option: str, value: str, message: str
) -> None:
    result = _collect(pytester, example_root, option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


@pytest.mark.pi  # the run checks its host binary before collecting
@pytest.mark.parametrize(
    "extra", [("--skill-eval-group", "nope"), ("-k", "no-such-item")], ids=["error", "deselected"]
)
def test_a_run_that_collects_nothing_writes_nothing(
    pytester: pytest.Pytester, example_root: Path, extra: tuple[str, str]
) -> None:
    result = pytester.runpytest_inprocess(*skill_eval_args(example_root, *extra))
    assert result.ret != 0
    assert not (example_root / ".skill-eval").exists()  # no result holding only its invocation
    assert "[unknown]" not in result.stdout.str()
    assert "skill-eval ===" not in result.stdout.str()
