"""Checks and comparisons as pytest sub-reports and JUnit rows, the fail-on policy, teststatus.

A check or comparison is not an item: it is logged as a call + teardown report pair under its
own node id while its item runs, so the terminal shows it and JUnit writes one row for it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from _pytest.junitxml import xml_key
from _pytest.reports import TestReport

from .analysis import noise_floor
from .common.wording import counted, noun
from .evidence import read, sealed_root
from .evidence.iteration import unchanged_groups, unchanged_line
from .evidence.store import redactor_for
from .nodeids import subresult_name
from .run import GroupRun
from .views.places import placed_text, shown_path
from .views.present import _compact, describe, escape_cell, excerpt_of, observation
from .views.toolerrors import tool_errors
from .xdist import send_to_controller

KIND = "skill_eval_kind"
"""The user property that marks a report as a sub-result (its value: check or comparison)."""


# -- the fail-on policy -----------------------------------------------------------------------


def check_fails(check: Mapping[str, Any], fail_on: str) -> bool:
    """`any` fails every failing check, `candidate` only the candidate's."""
    return check["state"] == "fail" and (
        fail_on == "any" or (fail_on == "candidate" and check["variant"] == "candidate")
    )


def comparison_fails(comparison: Mapping[str, Any], fail_on: str) -> bool:
    """`regression` fails a pass-to-fail comparison."""
    return fail_on == "regression" and comparison["transition"] == "pass-to-fail"


def run_problem(variant: str, record: Mapping[str, Any]) -> str:
    """One line on why a run is not ordinary evidence (it always fails its item)."""
    detail = ""
    error = record.get("error")
    if isinstance(error, dict) and error.get("message"):
        detail = f": {error['message']}"
    process = record.get("process") or {}
    if not detail and process:
        parts = []
        if process.get("terminationReason"):
            parts.append(f"termination {process['terminationReason']}")
        if process.get("assistantError"):
            parts.append(f"assistant error {process['assistantError']!r}")
        if process.get("protocolErrors"):
            first = process["protocolErrors"][0]
            parts.append(
                f"{counted(len(process['protocolErrors']), 'protocol error')}, first: "
                + json.dumps(first, ensure_ascii=False)[:300]
            )
        if process.get("exitCode") not in (0, None):
            parts.append(f"exit code {process['exitCode']}")
        if process.get("settled") is False:
            parts.append("not settled")
        detail = ": " + "; ".join(parts) if parts else ""
    hint = f"\nhint: {record['hint']}" if record.get("hint") else ""
    return f"{variant} run is {record['state']}{detail}{hint}"


def grade_problem(grade: Mapping[str, Any]) -> str:
    """One line on why a group could not be graded (it always fails the finalising item)."""
    reasons = "; ".join(
        f"{e.get('id') or 'system'}: {escape_cell(str(e.get('reason')))}" for e in grade["errors"]
    )
    return f"grade-error: {reasons}"


# -- sub-reports ------------------------------------------------------------------------------


def log_subresults(
    item: pytest.Item,
    run: GroupRun,
    variant: str,
    checks: list[dict[str, Any]],
    comparisons: list[dict[str, Any]],
    fail_on: str,
) -> None:
    """Log one sub-result per check, then per comparison; failures follow `fail_on`.

    A check the newest noise floor found flaky (recorded in the trial's invocation) never
    gates: its sub-result says `flaky` and does not fail.
    """
    flaky = noise_floor.recorded_flaky(run.result_dir)
    for check in checks:
        noisy = noise_floor.ignored(flaky, run.group_dir.name, check)
        fails = check_fails(check, fail_on) and not noisy
        extra = _tool_errors(run, (variant,)) if fails else ""
        _log(item, run, variant, check["id"], "check", check, fails, extra, flaky=noisy)
    for comparison in comparisons:
        noisy = noise_floor.ignored(flaky, run.group_dir.name, comparison)
        fails = comparison_fails(comparison, fail_on) and not noisy
        extra = _tool_errors(run, ("baseline", "candidate")) if fails else ""
        _log(item, run, variant, comparison["id"], "comparison", comparison, fails, extra,
             flaky=noisy)  # fmt: skip


def _tool_errors(run: GroupRun, variants: tuple[str, ...]) -> str:
    """Lines naming the tool calls the host reported failed in `variants`' runs."""
    lines = [
        f"\n{name} tool error: {error}"
        for name in variants
        for error in tool_errors(run.group_dir / name)
    ]
    return "".join(lines)


def _log(
    item: pytest.Item,
    run: GroupRun,
    variant: str,
    name: str,
    kind: str,
    data: dict[str, Any],
    fails: bool,
    extra: str = "",
    *,
    flaky: bool = False,
) -> None:
    state = data["state"] if kind == "check" else data["transition"]
    props: list[tuple[str, Any]] = [
        (KIND, kind),
        ("state", state),
        # <results>/<id>/groups/<group>: under the rootdir, else as <id>/groups/<group>.
        ("evidence", shown_path(run.group_dir, item.config.rootpath, run.group_dir.parents[2])),
    ]
    if flaky:
        props.append(("flaky", True))
    if kind == "check":
        props += [
            ("expected", _compact(data.get("expected"))),
            ("observed", _compact(observation(data))),
        ]
        excerpt = excerpt_of(data)
        if excerpt is not None:
            props.append(("excerpt", excerpt))
    text = describe(kind, data) + extra
    # The last net before the terminal and JUnit: the group's secrets, if any slipped through.
    redactor = redactor_for(run.group_dir)
    if redactor:
        text = redactor.redact_text(text)[0]
        props = [(key, redactor.redact_value(value)[0]) for key, value in props]
    # JUnit is shared (a CI artifact): agent text names the files it saw by absolute path.
    bases = (item.config.rootpath, run.group_dir.parents[2])
    text = placed_text(text, *bases)
    props = [(key, placed_text(v, *bases) if isinstance(v, str) else v) for key, v in props]
    if fails:
        outcome = "failed"
    elif kind == "check" and state == "unavailable":
        outcome = "skipped"
    else:
        outcome = "passed"
    reports = sub_report(
        item,
        subresult_name(item.name, run.loaded.group.id, variant, name, kind),
        outcome,
        text if outcome != "passed" else None,
        props,
    )
    # Sub-results are written while the item runs: lift capture so they reach the terminal.
    capman = item.config.pluginmanager.get_plugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
        for report in reports:
            if not send_to_controller(item.config, report):
                item.ihook.pytest_runtest_logreport(report=report)


def sub_report(
    item: pytest.Item,
    name: str,
    outcome: str,
    longrepr: str | None,
    props: list[tuple[str, Any]],
) -> list[TestReport]:
    """A call + teardown pair so JUnit writes a complete <testcase> with properties."""
    nodeid = f"{item.nodeid.rsplit('::', 1)[0]}::{name}"
    location = (item.location[0], item.location[1], name)
    call = TestReport(
        nodeid=nodeid,
        location=location,
        keywords={},
        outcome=outcome,  # type: ignore[arg-type]
        longrepr=longrepr
        if outcome != "skipped"
        else (shown_path(item.path, item.config.rootpath), 0, longrepr or ""),
        when="call",
        user_properties=props,
    )
    teardown = TestReport(
        nodeid=nodeid,
        location=location,
        keywords={},
        outcome="passed",
        longrepr=None,
        when="teardown",
        user_properties=props,
    )
    return [call, teardown]


def record_seals(config: pytest.Config, result_dirs: Mapping[int, Path], trials: int) -> None:
    """Each sealed trial's root as a `<testsuite>` property of the JUnit XML, when one is written.

    `skill-eval-seal` for a single trial, `skill-eval-seal-trial-<k>` for trial k of several;
    the value, `sha256:<root>`, is what `skill-eval verify RESULT --seal` takes.
    """
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for trial, result_dir in sorted(result_dirs.items()):
        root = sealed_root(result_dir)
        if root is not None:
            name = "skill-eval-seal" if trials == 1 else f"skill-eval-seal-trial-{trial}"
            xml.add_global_property(name, f"sha256:{root}")


def record_unchanged(config: pytest.Config, result_dirs: dict[int, Path]) -> None:
    """Each group `--skill-eval-affected-since` left unrun, as a `skill-eval-unchanged`
    property of the JUnit XML: its earlier grade by that result's seal and its manifest."""
    xml = config.stash.get(xml_key, None)
    if xml is None or not result_dirs:
        return
    for reference in unchanged_groups(read.load_invocation(min(result_dirs.items())[1])):
        xml.add_global_property("skill-eval-unchanged", unchanged_line(reference))


def floor_lines(result_dirs: Mapping[int, Path]) -> list[str]:
    """The noise floor the invocation's (first) trial names as deciding what never gates, by
    id and its trials' seal roots, and the floors it set aside (`noise_floor.decided_lines`)."""
    if not result_dirs:
        return []
    try:
        invocation = read.load_invocation(min(result_dirs.items())[1])
    except read.ReadError:
        return []
    return noise_floor.decided_lines(invocation)


def record_decided(
    config: pytest.Config, result_dirs: Mapping[int, Path], gate: Sequence[str]
) -> None:
    """What decided what gates, as JUnit `<testsuite>` properties when a file is written: the
    noise floor (`skill-eval-noise-floor`) and the significance gate's pooled and set-aside
    results and rejections (`skill-eval-gate`), one line each."""
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for line in floor_lines(result_dirs):
        xml.add_global_property("skill-eval-noise-floor", line)
    for line in gate:
        xml.add_global_property("skill-eval-gate", line)


def log_gate(config: pytest.Config, failures: list[tuple[str, str]]) -> None:
    """Each comparison the significance gate rejected, as a failing test case (call + teardown):
    JUnit writes a `<failure>`, and pytest's final line counts it among the failed."""
    for name, text in failures:
        nodeid = f"skill-eval::{name}"
        props: list[tuple[str, Any]] = [(KIND, "gate"), ("state", "regression")]
        for when, outcome, longrepr in (("call", "failed", text), ("teardown", "passed", None)):
            report = TestReport(
                nodeid=nodeid,
                location=("skill-eval", None, name),
                keywords={},
                outcome=outcome,  # type: ignore[arg-type]
                longrepr=longrepr,
                when=when,  # type: ignore[arg-type]
                user_properties=props,
            )
            config.hook.pytest_runtest_logreport(report=report)


def record_shard_seal(config: pytest.Config, root: str | None) -> None:
    """A shard's root as the `skill-eval-shard-seal` property of its JUnit XML, when written.

    The value, `sha256:<root>`, is what `skill-eval merge --shard-root K=…` takes.
    """
    xml = config.stash.get(xml_key, None)
    if xml is not None and root is not None:
        xml.add_global_property("skill-eval-shard-seal", f"sha256:{root}")


# -- the terminal -----------------------------------------------------------------------------


def teststatus(report: TestReport, config: pytest.Config) -> tuple[str, str, Any] | None:
    """Sub-results show their evidence state (and, with -v, expected and observed)."""
    props = dict(getattr(report, "user_properties", []) or [])
    kind = props.get(KIND)
    if kind is None or report.when != "call":
        if kind is not None:
            return "", "", ""
        return None
    state = str(props.get("state"))
    word = state.upper() + (" (flaky: does not gate)" if props.get("flaky") else "")
    if config.get_verbosity() >= 1 and kind == "check":
        expected, observed = _clip(props.get("expected")), _clip(props.get("observed"))
        word = f"{word} expected={expected} observed={observed}"
        if "excerpt" in props:
            # The hash fills the clipped observation; the text around the expectation is here.
            word = f"{word} text {props['excerpt']}"
    if report.failed:
        return "failed", "F", (word, {"red": True})
    if kind == "comparison":
        return "transitions", "t", (word, {"cyan": True})
    letter = {"pass": ".", "fail": "f", "unavailable": "u"}.get(state, "?")
    category = {state: f"checks {word}" for state, word in _CHECK_WORDS.items()}
    markup = {"pass": {"green": True}, "fail": {"yellow": True}, "unavailable": {"yellow": True}}
    return category.get(state, "checks"), letter, (word, markup.get(state, {}))


_CHECK_WORDS = {"pass": "passed", "fail": "failed", "unavailable": "unavailable"}


def name_check_counts(reporter: Any) -> None:
    """pytest prints each category as "<count> <category>"; name the check categories for
    their count ("1 check unavailable", not "1 checks unavailable"), in place and in order.

    The terminal reporter may have listed the categories already in its private
    `_known_types` (checked against pytest 9.2.0); it is dropped so that the summary line
    lists them again. Without the attribute nothing else is needed.
    """
    stats: dict[str, list[Any]] = reporter.stats
    renamed = {
        f"checks {word}": f"{noun(len(stats.get(f'checks {word}', [])), 'check')} {word}"
        for word in _CHECK_WORDS.values()
    }
    entries = [(renamed.get(key, key), reports) for key, reports in stats.items()]
    stats.clear()
    stats.update(entries)
    if hasattr(reporter, "_known_types"):
        reporter._known_types = None


class ProgressFilter:
    """Keeps sub-results out of the terminal's progress count; one per invocation.

    The terminal reporter counts every reported node id in its private
    `_progress_nodeids_reported` set (checked against pytest 9.2.0); counting sub-results
    would take the progress percentage past 100%. Without the attribute only that suffers.
    """

    name = "skill-eval-subresults"

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: TestReport) -> None:
        """After the terminal reporter has counted a sub-result, take it out again."""
        if KIND not in dict(report.user_properties or []):
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        reported = getattr(reporter, "_progress_nodeids_reported", None)
        if isinstance(reported, set):
            reported.discard(report.id)


def _clip(value: Any, limit: int = 160) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def register(config: pytest.Config) -> None:
    """Register the invocation's ProgressFilter."""
    config.pluginmanager.register(ProgressFilter(config), ProgressFilter.name)


def unregister(config: pytest.Config) -> None:
    """Unregister the invocation's ProgressFilter, if any."""
    plugin = config.pluginmanager.get_plugin(ProgressFilter.name)
    if plugin is not None:
        config.pluginmanager.unregister(plugin)
