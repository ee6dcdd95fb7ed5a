"""Every message the plugin and the `skill-eval` CLI give for a user's mistake, run for real.

The rule each message is held to:

1. it is one line, with no traceback;
2. it names what is wrong: the file (by name) or the option, and echoes the value given
   (each row lists these as the substrings the line must hold);
3. it says how to fix it: the line holds one of the imperative words in `FIX` ("use",
   "pass", "remove", "set", "declare", "give", "add", "choose", "correct", "fix", "did you
   mean", …) as a whole word.

A mistake is triggered through pytest in-process (`Plugin`: arguments after the example
suite's own, optionally after editing one of its files) or through the console script's
`main([...])` (`Cli`). Rows are grouped by the part of the product that owns the message.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.commands import cli
from pytest_skill_eval.definitions import Group
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.hosts.credentials import (
    MissingCredentialsError,
    refuse_live_without_credentials,
)
from tests.support.roots import body_group
from tests.support.runs import skill_eval_args
from tests.views.conftest import build_result

FIX = re.compile(
    r"\b(use|pass|remove|set|declare|give|add|choose|did you mean|run|save|install|drop|"
    r"rename|create|correct|fix|write)\b"
)

Edit = Callable[[Path], None]


def _rename_key(file: str, old: str, new: str) -> Edit:
    """An edit of the example suite: key `old` of `file` (relative to the root) renamed."""

    def edit(root: Path) -> None:
        path = root / file
        document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        document[new] = document.pop(old)
        path.write_text(json.dumps(document), encoding="utf-8")

    return edit


def _write(file: str, text: str) -> Edit:
    def edit(root: Path) -> None:
        (root / file).write_text(text, encoding="utf-8")

    return edit


def _remove(entry: str) -> Edit:
    """An edit of the example suite: the file or directory `entry` (relative to the root) gone."""

    def edit(root: Path) -> None:
        path = root / entry
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()

    return edit


def _expectation_kind(kind: str) -> Edit:
    def edit(root: Path) -> None:
        path = root / "groups" / "changelog-entry.json"
        document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        document["expectations"][0]["kind"] = kind
        path.write_text(json.dumps(document), encoding="utf-8")

    return edit


@dataclass(frozen=True)
class Plugin:
    """`pytest --collect-only --skill-eval suite.json … *args` on a copy of the example suite;
    `{root}` in an argument is that copy."""

    args: tuple[str, ...]
    edit: Edit | None = None
    ini: str | None = None  # the ini file's [pytest] lines

    def output(self, pytester: pytest.Pytester, root: Path) -> str:
        if self.edit is not None:
            self.edit(root)
        if self.ini is not None:
            pytester.makeini(f"[pytest]\n{self.ini}\n")
        args = [arg.replace("{root}", str(root)) for arg in self.args]
        result = pytester.runpytest_inprocess(
            "--collect-only", "-q", *skill_eval_args(root, *args, cassettes=False)
        )
        assert result.ret != pytest.ExitCode.OK
        return result.stdout.str() + "\n" + result.stderr.str()


@dataclass(frozen=True)
class Cli:
    """`skill-eval --root <root> *argv`, through `cli.main`; `{root}` as for `Plugin`."""

    argv: tuple[str, ...]
    exit_codes: tuple[int, ...] = field(default=(1, 2))
    edit: Edit | None = None

    def output(self, capsys: pytest.CaptureFixture[str], root: Path) -> str:
        if self.edit is not None:
            self.edit(root)
        argv = ["--root", str(root), *(arg.replace("{root}", str(root)) for arg in self.argv)]
        try:
            code = cli.main(argv)
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        captured = capsys.readouterr()
        assert code in self.exit_codes
        return captured.out + "\n" + captured.err


Trigger = Plugin | Cli


def _edit_json(path: Path, change: Callable[[Any], None]) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document), encoding="utf-8")


def _results_a_and_b(change: Edit) -> Edit:
    """An edit of the root: the view fixture result as runs `a` and `b`, then `change` of b."""

    def edit(root: Path) -> None:
        built = build_result(root)
        for name in ("a", "b"):
            shutil.copytree(built, built.parent / name)
            summary = built.parent / name / layout.SUMMARY
            summary.write_text(
                json.dumps(json.loads(summary.read_text(encoding="utf-8")) | {"id": name}),
                encoding="utf-8",
            )
        change(built.parent / "b")

    return edit


def _b_on_claude_code(b: Path) -> None:
    def hosts(summary: dict[str, Any]) -> None:
        for record in summary["groups"]:
            record["host"] = "claude-code"
            groups = layout.groups_dir(b)
            shutil.move(groups / record["id"], layout.group_dir(b, record["id"], "claude-code"))

    _edit_json(b / layout.SUMMARY, hosts)


def _b_definition(change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(b: Path) -> None:
        _edit_json(layout.group_dir(b, "changelog-entry") / layout.DEFINITION, change)

    return edit


def _b_source(definition: dict[str, Any]) -> None:
    definition["variants"]["candidate"]["source"] = {"kind": "git", "revision": "HEAD~1"}


def _refused(
    option: str, value: str, *said: str, before: tuple[str, ...] = (), ident: str = ""
) -> Any:
    """A row for a value `option` does not accept (after the options `before`): the line names
    the option, echoes the value quoted, and says `said`."""
    name = ident or "option-" + option.removeprefix("--skill-eval-")
    return pytest.param(Plugin((*before, option, value)), [option, f'"{value}"', *said], id=name)


def _plan_refused(option: str, value: str, *said: str, quote: str = '"') -> Any:
    """A row for a value `skill-eval plan`'s `option` does not accept: the line names the
    option, echoes the value (in `quote`s) and says `said`."""
    argv = ("plan", "{root}/suite.json", option, value, "-o", "{root}/plan.json")
    expected = [option, f"{quote}{value}{quote}", *said]
    return pytest.param(Cli(argv), expected, id="cli-plan-" + option.removeprefix("--"))


COMPARE = ("compare", "{root}/.skill-eval/runs/a", "{root}/.skill-eval/runs/b", "--force")
SCRIPTS = ("--skill-eval-cassettes", "{root}/scripts")

CASES: list[Any] = [
    # --- options, definitions and the CLI's own options ---
    pytest.param(
        Plugin((), _rename_key("groups/changelog-entry.json", "fixture", "fixtrue")),
        ["changelog-entry.json", "/fixtrue", "'fixtrue'", "did you mean 'fixture'"],
        id="definition-misspelt-key",
    ),
    pytest.param(
        Plugin((), _expectation_kind("file-txt")),
        ["changelog-entry.json", "/expectations/0/kind", '"file-txt"', "use one of"],
        id="definition-unknown-expectation-kind",
    ),
    pytest.param(
        Plugin((), _write("groups/changelog-entry.json", '{\n  "kind": "group",,\n}')),
        ["changelog-entry.json", "invalid JSON at line 2"],
        id="definition-invalid-json",
    ),
    pytest.param(
        Plugin(
            (),
            _write(
                "suite.json",
                '{"schema_version": 1, "kind": "suite", "id": "s", "groups": ["groups/nope.json"]}',
            ),
        ),
        ["suite.json", "/groups/0", "nope.json", "does not exist"],
        id="definition-missing-group-file",
    ),
    pytest.param(
        Plugin((), ini="skill_eval_pi_auth = no-auth.json"),
        ["skill_eval_pi_auth", "no-auth.json", "no such file"],
        id="ini-pi-auth-missing",
    ),
    _refused("--skill-eval-record", "onc", "none, once, all"),
    _refused("--skill-eval-trials", "three", "positive integer", "auto"),
    _refused(
        "--skill-eval-max-trials", "x", "positive integer", before=("--skill-eval-trials", "auto")
    ),
    _refused("--skill-eval-max-cost", "abc", "number of USD"),
    _refused("--skill-eval-no-progress-timeout", "soon", "number of seconds"),
    _refused("--skill-eval-reserve", "lots", "number of USD"),
    _refused("--skill-eval-shard", "3/2", "K/N"),
    _refused("--skill-eval-variant", "both", "baseline, candidate"),
    _refused("--skill-eval-fail-on", "sometimes", "any, regression, significant-regression"),
    _refused(
        "--skill-eval-alpha",
        "5%",
        "between 0 and 1",
        before=("--skill-eval-fail-on", "significant-regression"),
    ),
    _refused("--skill-eval-host", "cursor", "pi, claude-code, codex, gemini-cli"),
    pytest.param(
        Plugin(("--skill-eval-cassettes", "{root}/no-scripts")),
        ["--skill-eval-cassettes", "no-scripts"],
        id="option-cassettes-missing",
    ),
    _refused(
        "--skill-eval-max-trials",
        "1",
        "2 or more",
        before=("--skill-eval-trials", "auto"),
        ident="option-max-trials-auto",
    ),
    pytest.param(
        Plugin(("--skill-eval-group", "changelog-entyr")),
        ["suite.json", "'changelog-entyr'", "did you mean 'changelog-entry'?"],
        id="option-group-misspelt",
    ),
    pytest.param(
        Plugin(("--skill-eval-group", "9")),
        ["suite.json", "'9'", "use a position 1..2"],
        id="option-group-position",
    ),
    pytest.param(
        Plugin(("--skill-eval-plan", "{root}/no-plan.json")),
        ["no-plan.json", "cannot read plan"],
        id="option-plan-missing",
    ),
    pytest.param(
        Plugin(("--skill-eval-record", "once")),
        ["--skill-eval-record once", "--skill-eval-cassettes"],
        id="option-record-without-cassettes",
    ),
    pytest.param(
        Plugin(("--skill-eval-shard", "1/2")),
        ["--skill-eval-shard 1/2", "--skill-eval-plan"],
        id="option-shard-without-plan",
    ),
    pytest.param(
        Plugin(("--skill-eval-ledger-url", "http://127.0.0.1:1")),
        ["--skill-eval-ledger-url", "http://127.0.0.1:1"],
        id="option-ledger-url-scheme",
    ),
    pytest.param(
        Cli(("view", "no-such-result")),
        ["Cannot find result", "no-such-result"],
        id="cli-missing-result",
    ),
    _plan_refused("--max-cost", "abc", "number of USD"),
    _plan_refused("--trials", "three", "positive integer"),
    _plan_refused("--host", "cursor", "pi, claude-code, codex, gemini-cli"),
    _plan_refused("--record", "onc", "'none', 'once', 'all'", quote="'"),
    pytest.param(
        Cli(("plan", "{root}/no-suite.json", "-o", "{root}/plan.json")),
        ["no-suite.json", "does not exist"],
        id="cli-plan-missing-suite",
    ),
    _plan_refused("--variant", "both", "'baseline', 'candidate'", quote="'"),
    pytest.param(
        Cli(("merge", "{root}/no-plan.json", "{root}/shard1")),
        ["no-plan.json", "cannot read plan"],
        id="cli-merge-missing-plan",
    ),
    pytest.param(
        Cli(("compare", "no-such-a", "no-such-b")),
        ["Cannot find result", "no-such-a"],
        id="cli-compare-missing-result",
    ),
    pytest.param(
        Cli(COMPARE, (2,), _results_a_and_b(_b_on_claude_code)),
        ["differ in host (pi vs claude-code)", "not only in revision", "--axis host"],
        id="cli-compare-host-beyond-axis",
    ),
    pytest.param(
        Cli(COMPARE, (2,), _results_a_and_b(_b_definition(lambda d: d.update(model="x/y")))),
        ["differ in model (unset vs x/y)", "changelog-entry", "--axis model"],
        id="cli-compare-model-beyond-axis",
    ),
    pytest.param(
        Cli((*COMPARE, "--axis", "model"), (2,), _results_a_and_b(_b_definition(_b_source))),
        ["differ in revision", '"HEAD~1"', "variants.candidate.source", "--axis revision"],
        id="cli-compare-revision-beyond-axis",
    ),
    pytest.param(
        Cli(
            COMPARE,
            (2,),
            _results_a_and_b(_b_definition(lambda d: d.update(input={"prompt": "Other."}))),
        ),
        ["definition of group changelog-entry (sha256:", " vs sha256:", "input.prompt", "same"],
        id="cli-compare-definition-beyond-axis",
    ),
    # --- end of options, definitions and the CLI's own options ---
    # --- static: declared resources and scripts, checked at collection ---
    pytest.param(
        Plugin((), _remove("skills/changelog-keeper")),
        ["changelog-entry.json", "/variants/candidate/skills/0", "skills/changelog-keeper"],
        id="static-missing-skill",
    ),
    pytest.param(
        Plugin(SCRIPTS, _remove("scripts/changelog-entry/candidate.yaml")),
        ["candidate.yaml", "--skill-eval-record once"],
        id="static-missing-script",
    ),
    pytest.param(
        Plugin(
            SCRIPTS,
            _write(
                "scripts/changelog-entry/candidate.yaml",
                "version: 1\ninteractions:\n  - respones: {}\n",
            ),
        ),
        ["candidate.yaml", "line 3", "'respones'", "did you mean 'response'?"],
        id="static-unknown-script-key",
    ),
    # --- end of static ---
]


def _the_line(output: str, expected: list[str]) -> str:
    lines = [line for line in output.splitlines() if all(part in line for part in expected)]
    assert lines, f"no line holds all of {expected}:\n{output}"
    return lines[0]


@pytest.mark.parametrize(("trigger", "expected"), CASES)
def test_a_mistake_is_one_line_naming_what_the_value_and_the_fix(
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    example_root: Path,
    trigger: Trigger,
    expected: list[str],
) -> None:
    if isinstance(trigger, Plugin):
        output = trigger.output(pytester, example_root)
    else:
        output = trigger.output(capsys, example_root)
    line = _the_line(output, expected)
    assert FIX.search(line), f"the message says no fix: {line}"
    assert "Traceback" not in output


# Mistakes about a result directory or a live run, triggered on a fresh directory: what the
# user reads on stderr (the CLI) or in the refusal (a live run without credentials).
DirTrigger = Callable[[Path], str]


def _cli_stderr(*argv: str) -> DirTrigger:
    """Run `skill-eval ARGV` (`{dir}` is the fresh directory) and return what it wrote to stderr."""

    def run(directory: Path) -> str:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            cli.main([a.replace("{dir}", str(directory)) for a in argv])
        return err.getvalue()

    return run


def _aggregate(*argv: str) -> DirTrigger:
    """`_cli` on a directory holding an aggregate record."""

    def run(directory: Path) -> str:
        (directory / layout.AGGREGATE).write_text("{}", encoding="utf-8")
        return _cli_stderr(*argv)(directory)

    return run


def _live_without_credentials(directory: Path) -> str:
    group = Group.model_validate(
        body_group("answer", model={"model": "anthropic/claude-sonnet-4-5"}, expectations=[])
    )
    with pytest.raises(MissingCredentialsError) as raised:
        refuse_live_without_credentials([group], {}, None)
    return str(raised.value)


HASH = "sha256:" + "0" * 64

RUNTIME_CASES: list[object] = [
    # --- runtime: credentials, verify of an aggregate, one name per meaning (items 4, 5, 9) ---
    pytest.param(
        _cli_stderr("verify", "{dir}", "--seal", "abc"),
        ["--seal", "'abc'", "sha256:<64 hex digits>"],
        id="verify-seal-not-a-hash",
    ),
    pytest.param(
        _aggregate("verify", "{dir}", "--seal", HASH),
        ["--seal", "{dir}", "is an aggregate", "verify a trial with --seal"],
        id="verify-seal-on-an-aggregate",
    ),
    pytest.param(
        _cli_stderr("verify", "{dir}", "--root", HASH),
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


@pytest.mark.parametrize(("trigger", "expected"), RUNTIME_CASES)
def test_a_mistake_of_a_result_or_a_live_run_names_what_the_value_and_the_fix(
    trigger: DirTrigger, expected: Sequence[str], tmp_path: Path
) -> None:
    message = trigger(tmp_path)
    assert "Traceback" not in message
    for part in expected:
        assert part.replace("{dir}", str(tmp_path)) in message, message
