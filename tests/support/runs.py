"""Running a suite through the plugin and reading the evidence it leaves under `.skill-eval/`."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from tests.support.files import read_json
from tests.support.roots import Group, build


def skill_eval_args(
    root: Path, *extra: str, suite: Path | None = None, cassettes: bool = True
) -> list[str]:
    """The pytest arguments that run the suite at `root` offline against `root/scripts`."""
    __tracebackhide__ = True
    # Hypothesis's pytest plugin imports all of Hypothesis at each session's end (about 0.5 s
    # of CPU); no nested session uses it.
    args = [
        "-p",
        "no:cacheprovider",
        "-p",
        "no:hypothesispytest",
        "--skill-eval",
        str(suite or root / "suite.json"),
        "--skill-eval-root",
        str(root),
    ]
    if cassettes:
        args += ["--skill-eval-cassettes", str(root / "scripts")]
    return [*args, *extra]


def run(pytester: pytest.Pytester, root: Path, *extra: str) -> pytest.RunResult:
    """Run the suite at `root` through the plugin, scripted, in a subprocess."""
    __tracebackhide__ = True
    return pytester.runpytest_subprocess(*skill_eval_args(root, *extra))


def run_candidate(
    pytester: pytest.Pytester, root: Path, groups: Sequence[Group], *extra: str
) -> pytest.RunResult:
    """Write `groups` at `root` and run their candidates through the plugin, scripted, in a
    subprocess."""
    __tracebackhide__ = True
    suite = build(root, groups)
    args = skill_eval_args(root, "--skill-eval-variant", "candidate", *extra, suite=suite)
    return pytester.runpytest_subprocess(*args)


def refusal(result: pytest.RunResult, *hidden: str) -> str:
    """The one `ERROR:` line of a run refused before anything ran: no traceback, and none of
    `hidden` in what it printed."""
    __tracebackhide__ = True
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    printed = result.stderr.str() + result.stdout.str()
    assert "Traceback" not in printed
    for secret in hidden:
        assert secret not in printed
    (line,) = [text for text in result.stderr.str().splitlines() if text.startswith("ERROR: ")]
    return line


def run_detached(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run the suite at `root` in a child pytest that needs no `pytester` (any fixture scope).

    No configuration file is read and the rootdir is `root`, so node ids and JUnit names do
    not depend on where the run's directory lies.
    """
    __tracebackhide__ = True
    basetemp = root.parent / f"{root.name}-basetemp"
    command = [sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(root)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # not the outer's
    return subprocess.run(
        [*command, f"--basetemp={basetemp}", *skill_eval_args(root, *extra)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def popen(pytester: pytest.Pytester, args: Sequence[str]) -> Any:
    """Start pytest in a child process (like runpytest_subprocess) without waiting for it."""
    __tracebackhide__ = True
    basetemp = pytester.path.parent / f"{pytester.path.name}-basetemp"
    command = [sys.executable, "-m", "pytest", f"--basetemp={basetemp}", *args]
    return pytester.popen(command, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


@contextlib.contextmanager
def reaped(child: Any) -> Iterator[Any]:
    """`child` (from `popen`), killed and reaped on the way out if it still runs, so a failed
    wait or assertion never leaves a pytest behind."""
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def results(root: Path) -> list[Path]:
    """Result directories (not aggregates), oldest first."""
    __tracebackhide__ = True
    runs = root / ".skill-eval" / "runs"
    return sorted(p for p in runs.iterdir() if (p / "invocation.json").is_file())


def aggregates(root: Path) -> list[Path]:
    """Aggregate directories."""
    __tracebackhide__ = True
    runs = root / ".skill-eval" / "runs"
    return sorted(p for p in runs.iterdir() if (p / "aggregate.json").is_file())


def result_dir(root: Path) -> Path:
    """The single entry under `.skill-eval/runs` of a run (fails when there are more)."""
    __tracebackhide__ = True
    runs = sorted((root / ".skill-eval" / "runs").iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def run_record(root: Path, group: str, name: str) -> dict[str, Any]:
    """A variant's run.json in the single result of `root`."""
    __tracebackhide__ = True
    record: dict[str, Any] = read_json(result_dir(root) / "groups" / group / name / "run.json")
    return record


def check_states(group_dir: Path) -> dict[str, str]:
    """Each check's state in a group's deterministic grade, by id."""
    __tracebackhide__ = True
    grade = read_json(group_dir / "deterministic-grade.json")
    return {check["id"]: check["state"] for check in grade["checks"]}


def outcome(group_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    """A group's check states and its comparisons' transitions, by id."""
    __tracebackhide__ = True
    grade = read_json(group_dir / "deterministic-grade.json")
    transitions = {c["id"]: c["transition"] for c in grade["comparisons"]}
    return check_states(group_dir), transitions


def ran_and_cancelled(
    result_dir: Path, groups: Iterable[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Both variants' run records of `groups` (directory names): those whose subject started,
    and those cancelled."""
    __tracebackhide__ = True
    records: list[dict[str, Any]] = [
        read_json(result_dir / "groups" / group / variant / "run.json")
        for group in groups
        for variant in ("baseline", "candidate")
    ]
    ran = [r for r in records if r.get("process")]
    return ran, [r for r in records if r["state"] == "cancelled"]


def run_facts(result_dir: Path, *, changes: bool = False) -> dict[str, Any]:
    """What a result decided, to compare with another's: its state and, by group directory, the
    group's and its variants' states, each check's state and observation, each comparison's
    transition (and, with `changes`, what each variant changed in its workspace)."""
    __tracebackhide__ = True
    facts: dict[str, Any] = {"summary": read_json(result_dir / "summary.json")["state"]}
    for group_dir in sorted((result_dir / "groups").iterdir()):
        grade = read_json(group_dir / "deterministic-grade.json")
        record = read_json(group_dir / "group.json")
        facts[group_dir.name] = {
            "state": record["state"],
            "variants": record["variants"],
            "checks": [(c["id"], c["state"], c["observed"]) for c in grade["checks"]],
            "comparisons": [(c["id"], c["transition"]) for c in grade["comparisons"]],
        }
        if changes:
            facts[group_dir.name]["changes"] = [
                read_json(group_dir / v / "run.json")["effects"]["changes"]
                for v in ("baseline", "candidate")
            ]
    return facts


def junit_states(*files: Path) -> list[tuple[str, str | None]]:
    """Each JUnit test case of `files` with the state property it carries, sorted."""
    __tracebackhide__ = True
    rows = []
    for junit in files:
        for case in ElementTree.parse(junit).getroot().iter("testcase"):
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            rows.append((str(case.get("name")), props.get("state")))
    return sorted(rows)


def model_requests(variant_dir: Path) -> list[dict[str, Any]]:
    """The requests the scripted model received, from model-requests.jsonl."""
    __tracebackhide__ = True
    lines = (variant_dir / "model-requests.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def system_message(request: Mapping[str, Any]) -> str:
    """The system prompt of one OpenAI chat-completions request body."""
    __tracebackhide__ = True
    messages = request["body"]["messages"]
    assert messages[0]["role"] == "system", messages[0]
    content = messages[0]["content"]
    assert isinstance(content, str)
    return content


def tool_results(request: Mapping[str, Any]) -> list[str]:
    """Tool results the model received in one request (the history included), in order."""
    __tracebackhide__ = True
    return [
        m["content"]
        for m in request["body"]["messages"]
        if m.get("role") == "tool" and isinstance(m.get("content"), str)
    ]


def activity(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every tool activity record of a run, in order."""
    __tracebackhide__ = True
    return [a for turn in run["turns"] for a in turn["toolActivity"]]
