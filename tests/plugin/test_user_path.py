"""The path a skill author takes: errors that explain, reruns of what failed, the ini file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.files import read_json, write
from tests.support.roots import (
    answers_root,
    body_group,
    fast_dir,
    make_root,
    write_answer,
    write_script,
)
from tests.support.runs import result_dir, results, run, run_record, skill_eval_args

PACKAGE = Path(__file__).resolve().parents[2]


def _root(path: Path, baseline: str = "no") -> Path:
    return answers_root(path, {"answer/baseline": baseline, "answer/candidate": "yes"}, host="pi")


# -- item 2: a script that ends too early ----------------------------------------------------


@pytest.mark.pi
def test_a_script_that_ends_too_early_is_infrastructure_failed_naming_the_missing_interaction(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root")
    short = root / "scripts" / "answer" / "candidate.yaml"
    write_script(short, write_answer("yes")[:1])  # the closing reply is missing

    result = run(pytester, root)

    output = result.stdout.str() + result.stderr.str()
    assert "TypeError" not in output, output
    result.stdout.fnmatch_lines(
        [f"*candidate run is infrastructure-failed*{short}* has 1 interaction, request 2*"]
    )
    record = run_record(root, "answer", "candidate")
    assert record["state"] == "infrastructure-failed"
    assert str(short) in record["error"]["message"]
    assert "request 2 has none" in record["error"]["message"]
    # Partial evidence is kept: the first turn's write happened and Pi's output is on record.
    variant_dir = result_dir(root) / "groups" / "answer" / "candidate"
    assert (variant_dir / "events.jsonl").is_file()
    assert record["process"]["protocolErrors"][0]["reason"] == "script-exhausted"
    assert record["process"]["protocolErrors"][0]["interaction"] == 1


def test_a_subject_that_ran_is_never_recorded_cancelled_before_execution(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Invariant: whatever fails once a subject started, its run is never `cancelled`."""
    root = _root(tmp_path / "root")
    # The evaluator fails after the subject started (as the crash recording a run once did).
    pytester.makeconftest(
        """
        from pytest_skill_eval.run import converse

        def _crash(**kwargs):
            kwargs["prepared"].directory.joinpath("stderr.log").write_text("started\\n")
            raise TypeError("the evaluator broke while recording the run")

        def pytest_configure(config):
            converse.run_subject = _crash
        """
    )
    result = run(pytester, root)

    assert result.ret == 1
    for variant in ("baseline", "candidate"):
        record = run_record(root, "answer", variant)
        assert record["state"] == "infrastructure-failed", record
        assert "Cancelled before subject execution" not in json.dumps(record)
        assert "the evaluator broke while recording the run" in record["error"]["message"]


# -- item 3: no credentials --------------------------------------------------------------------


@pytest.mark.pi
def test_pi_exiting_for_want_of_an_api_key_says_how_to_declare_credentials(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    group = body_group("answer", model={"model": "anthropic/claude-sonnet-4-5"}, expectations=[])
    root = make_root(tmp_path / "root", [group], {})
    auth = write(tmp_path / "auth.json", "{}")  # declared, but holding no key: Pi refuses

    args = skill_eval_args(root, "-o", f"skill_eval_pi_auth={auth}", cassettes=False)
    result = pytester.runpytest_subprocess(*args)

    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*baseline run is infrastructure-failed*No API key*no credentials reached the subject"
            "*ANTHROPIC_API_KEY in runtime.environment.inherit*skill_eval_pi_auth*"
        ]
    )
    record = read_json(results(root)[-1] / "groups" / "answer" / "baseline" / "run.json")
    message = record["error"]["message"]
    assert "No API key" in message
    assert "no credentials reached the subject" in message
    assert "runtime.environment.inherit" in message
    assert "skill_eval_pi_auth" in message


# -- item 4: --lf reruns complete groups --------------------------------------------------------


@pytest.mark.pi
@pytest.mark.codex
def test_last_failed_reruns_both_variants_of_the_failed_group_only(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # On the fast host: --lf is pytest's, any host will do.
    root = answers_root(
        tmp_path / "root",
        {
            "bad/baseline": "no",  # the baseline's check fails
            "bad/candidate": "yes",
            "good/baseline": "yes",
            "good/candidate": "yes",
        },
    )
    args = skill_eval_args(root, "--skill-eval-fail-on", "any")
    args.remove("no:cacheprovider")
    args.remove("-p")

    first = pytester.runpytest_subprocess(*args)
    assert first.ret == 1
    second = pytester.runpytest_subprocess(*args, "--lf")

    output = second.stdout.str()
    assert "known failures not in selected tests" not in output, output
    second.stdout.fnmatch_lines(["*2 deselected*"])
    latest = results(root)[-1]
    bad, good = (latest / "groups" / fast_dir(g) for g in ("bad", "good"))
    assert (bad / "baseline" / "run.json").is_file()
    candidate = read_json(bad / "candidate" / "run.json")
    assert candidate["state"] == "complete"  # run again, though only the baseline failed
    assert not good.exists()


# -- item 5: the wrong directory ----------------------------------------------------------------


def test_running_from_the_wrong_directory_is_one_collection_error_and_writes_nothing(
    pytester: pytest.Pytester,
) -> None:
    root = _root(pytester.path / "suite-root")

    # No --skill-eval-root: the root is the current directory, where no `fixture` lives.
    result = pytester.runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        "--skill-eval",
        str(root / "suite.json"),
        "--skill-eval-cassettes",
        str(root / "scripts"),
    )

    assert result.ret == pytest.ExitCode.INTERRUPTED
    output = result.stdout.str()
    errors = [ln for ln in output.splitlines() if ": /fixture: " in ln]
    assert len(errors) == 1, output
    assert str(root / "groups" / "answer.json") in errors[0]
    assert f"definition root {pytester.path.resolve()}" in errors[0]
    assert "--skill-eval-root" in errors[0]
    assert "Traceback" not in output
    assert not (pytester.path / ".skill-eval").exists()  # nothing written where pytest ran
    assert not (root / ".skill-eval").exists()


# -- item 6: a script calling an undeclared tool ------------------------------------------------


def test_a_script_calling_an_undeclared_tool_is_a_collection_warning(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root")
    script = root / "scripts" / "answer" / "candidate.yaml"
    bash = {"response": {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]}}
    write_script(script, [*write_answer("yes")[:1], bash, write_answer("yes")[1]])

    result = pytester.runpytest_inprocess(*skill_eval_args(root, "--collect-only", "-q"))

    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*warnings summary*",
            f"*UndeclaredToolWarning: {script}: interaction 2 calls the tool 'bash', which group "
            "'answer' does not declare (tools: read, write, edit)*",
        ]
    )
    assert f"{root / 'scripts' / 'answer' / 'baseline.yaml'}: interaction" not in (
        result.stdout.str()
    )


# -- item 7: an option value is no test path ----------------------------------------------------


def test_an_option_value_written_with_a_space_never_chooses_the_rootdir(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path / "root")
    # Under this package, which has its own pytest configuration (addopts, testpaths).
    pi = PACKAGE / "node_modules" / ".bin" / "pi"
    assert pi.exists()
    assert (PACKAGE / "pyproject.toml").is_file()

    result = pytester.runpytest_inprocess(
        *skill_eval_args(root, "--collect-only", "-q"), "--skill-eval-pi", str(pi)
    )

    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    header = pytester.runpytest_inprocess(
        *skill_eval_args(root, "--collect-only"), "--skill-eval-pi", str(pi)
    )
    header.stdout.fnmatch_lines([f"rootdir: {pytester.path}"])
    assert "configfile" not in header.stdout.str()


@pytest.mark.pi
def test_a_host_started_through_a_wrapper_script_is_recorded_and_summarised(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """A binary option naming a wrapper (not a Node script): the run records no runtime, and
    the summary reads the run it wrote (it once refused its own `runtime: null`)."""
    root = _root(tmp_path / "root")
    node, pi = (PACKAGE / "node_modules" / ".bin" / name for name in ("node", "pi"))
    wrapper = write(
        tmp_path / "bin" / "pi-wrapper",
        f'#!/bin/sh\nexec "{node.resolve()}" "{pi.resolve()}" "$@"\n',
        mode=0o755,
    )

    result = run(pytester, root, "--skill-eval-pi", str(wrapper))

    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["result * [[]complete[]]*"])
    for variant in ("baseline", "candidate"):
        binary = run_record(root, "answer", variant)["binary"]
        assert binary["command"] == str(wrapper)
        assert "runtime" not in binary, binary


@pytest.mark.pi
def test_a_result_damaged_before_the_summary_is_one_line_not_a_traceback(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """A run.json changed under the run after it was sealed (or written wrong, as a wrapper
    script's once was): the summary says which file and how to check the result."""
    root = _root(tmp_path / "root")
    pytester.makeconftest(
        """
        import json
        from pathlib import Path

        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_sessionfinish(session):
            root = Path(session.config.getoption("--skill-eval-root"))
            for run in (root / ".skill-eval" / "runs").glob("*/groups/*/baseline/run.json"):
                record = json.loads(run.read_text())
                record["binary"]["runtime"] = None
                run.write_text(json.dumps(record))
        """
    )
    result = run(pytester, root)

    printed = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in printed
    assert "INTERNALERROR" not in printed
    result.stdout.fnmatch_lines(
        [
            "skill-eval: the summary cannot be shown: *baseline/run.json: at /binary/runtime: "
            "input should be a valid dictionary; the evidence is damaged; `skill-eval verify` on "
            "the result checks every file"
        ]
    )


# -- item 8: the definitions as an ini key ------------------------------------------------------


def test_the_definitions_can_be_named_in_the_ini_file_relative_to_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _root(pytester.path / "evals")
    write(
        pytester.path / "pyproject.toml",
        "[tool.pytest.ini_options]\n"
        'skill_eval_definitions = ["evals/suite.json"]\n'
        'skill_eval_root = "evals"\n'
        'skill_eval_cassettes = "evals/scripts"\n',
    )
    elsewhere = pytester.path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # ini paths are relative to the ini file, not to here

    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--collect-only", "-q")

    output = result.stdout.str() + result.stderr.str()
    assert "Unknown config option" not in output, output
    result.stdout.fnmatch_lines(
        ["*suite.json::answer[[]baseline[]]", "*suite.json::answer[[]candidate[]]"]
    )
