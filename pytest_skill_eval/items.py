"""pytest collection nodes: a definition file collects one item per group × variant × trial."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest._code.code import TerminalRepr
from _pytest.reports import TestReport

from .definitions import DefinitionError, LoadedGroup, SelectionError, load_definition, select
from .errors import EvidenceError, SkillEvalError
from .evidence import FAILING_RUN_STATES
from .execution import GroupRun
from .views.text import escape_cell

if TYPE_CHECKING:
    from .session import SkillEvalSession


class SkillEvalFailure(SkillEvalError):
    """An item's outcome is failed by the fail-on policy; the message is the whole story."""


class DefinitionCollectionError(SkillEvalError):
    """A definition file is invalid; shown without a traceback."""


class SkillEvalFile(pytest.File):
    """A suite or group definition given with --skill-eval."""

    def collect(self) -> Iterator[pytest.Item]:
        """One item per selected group × variant × trial."""
        state: SkillEvalSession = self.config.stash[SESSION_KEY]
        try:
            loaded = load_definition(self.path, state.root)
            selection = select(loaded, state.group_selector, state.variant_selector)
        except DefinitionError as error:
            raise DefinitionCollectionError(str(error)) from None
        except SelectionError as error:
            raise DefinitionCollectionError(f"{self.path}: {error}") from None
        for chosen in selection:
            for trial in range(1, state.trials + 1):
                run = state.group_run(chosen.loaded, trial)
                run.selected = dict(chosen.variants)
                for variant, selected in chosen.variants.items():
                    if selected:
                        yield VariantItem.from_parent(
                            self,
                            name=item_name(chosen.loaded, variant, trial, state.trials),
                            group_run=run,
                            variant=variant,
                        )

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        """Definition errors are one clear line, never a traceback."""
        if isinstance(excinfo.value, DefinitionCollectionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


VARIANT_ITEM = re.compile(
    r"^(?P<group>.+)\[(?P<variant>baseline|candidate)(?P<trial>-trial(?P<number>\d+))?\]$"
)


def parse_item_id(nodeid: str) -> tuple[str, str, int] | None:
    """`path::group[variant-trialK]` → (group id, variant, trial), None for other items."""
    match = VARIANT_ITEM.match(nodeid)
    if match is None or "::" not in match["group"]:
        return None
    return match["group"].rsplit("::", 1)[1], match["variant"], int(match["number"] or 1)


def item_name(loaded: LoadedGroup, variant: str, trial: int, trials: int) -> str:
    """`group-id[variant]`, or `group-id[variant-trialK]` when several trials run."""
    suffix = f"-trial{trial}" if trials > 1 else ""
    return f"{loaded.group.id}[{variant}{suffix}]"


class VariantItem(pytest.Item):
    """Runs one variant's subject; the group's last selected variant also grades the group."""

    def __init__(self, *, group_run: GroupRun, variant: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.group_run = group_run
        self.variant = variant
        group_id = group_run.loaded.group.id
        self.keywords[group_id] = True
        self.keywords[variant] = True
        self.keywords[f"trial{group_run.trial}"] = True

    def runtest(self) -> None:
        """Run the variant, report its checks, and apply the fail-on policy."""
        try:
            self._runtest()
        except EvidenceError as error:
            raise SkillEvalFailure(f"evidence could not be written: {error}") from None

    def _runtest(self) -> None:
        state: SkillEvalSession = self.config.stash[SESSION_KEY]
        run = self.group_run
        record = run.run_variant(self.variant, state.environment())
        self.user_properties.append(("evidence", str(run.group_dir / self.variant)))
        problems = []
        if record["state"] in FAILING_RUN_STATES:
            problems.append(run_problem(self.variant, record))
        if self.variant == last_selected(run):
            outcome = run.finalise(state.environment())
            grade = outcome["grade"]
            if grade["state"] == "grade-error":
                reasons = "; ".join(
                    f"{e.get('id') or 'system'}: {escape_cell(str(e.get('reason')))}"
                    for e in grade["errors"]
                )
                problems.append(f"grade-error: {reasons}")
            comparisons = grade["comparisons"]
        else:
            grade = state.preview_grade(run, self.variant)
            comparisons = []
        checks = [c for c in grade["checks"] if c["variant"] == self.variant]
        state.report_checks(self, checks)
        state.report_comparisons(self, comparisons)
        if problems:
            raise SkillEvalFailure("\n".join(problems))

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        """The evidence speaks for itself: states and reasons, with the evidence path."""
        if isinstance(excinfo.value, SkillEvalFailure):
            return f"{excinfo.value}\nevidence: {self.group_run.group_dir / self.variant}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the item comes from: the group definition file."""
        return self.group_run.loaded.path, None, self.name


def last_selected(run: GroupRun) -> str:
    """The variant whose item finalises the group (candidate unless only baseline is selected)."""
    chosen = [v for v in ("baseline", "candidate") if run.selected.get(v)]
    return chosen[-1] if chosen else "candidate"


def run_problem(variant: str, record: dict[str, Any]) -> str:
    """One line on why a run is not ordinary evidence."""
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
                f"{len(process['protocolErrors'])} protocol error(s), first: "
                + json.dumps(first, ensure_ascii=False)[:300]
            )
        if process.get("exitCode") not in (0, None):
            parts.append(f"exit code {process['exitCode']}")
        if process.get("settled") is False:
            parts.append("not settled")
        detail = ": " + "; ".join(parts) if parts else ""
    hint = f"\nhint: {record['hint']}" if record.get("hint") else ""
    return f"{variant} run is {record['state']}{detail}{hint}"


def sub_report(
    item: VariantItem,
    name: str,
    kind: str,
    outcome: str,
    longrepr: str | None,
    props: list[tuple[str, Any]],
) -> list[TestReport]:
    """A call + teardown pair so JUnit writes a complete <testcase> with properties."""
    # `file::group::check[variant]` keeps pytest's node-id grammar (params last) and gives JUnit
    # one row per check, named `check[variant]` under the group.
    group_id = item.group_run.loaded.group.id
    params = item.name[len(group_id) + 1 : -1]
    if kind == "comparison":
        params = "comparison" + params[len(item.variant) :]
    nodeid = f"{item.nodeid.rsplit('::', 1)[0]}::{group_id}::{name}[{params}]"
    location = (item.location[0], item.location[1], f"{group_id}::{name}[{params}]")
    call = TestReport(
        nodeid=nodeid,
        location=location,
        keywords={},
        outcome=outcome,  # type: ignore[arg-type]
        longrepr=longrepr if outcome != "skipped" else (str(item.path), 0, longrepr or ""),
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


SESSION_KEY = pytest.StashKey["SkillEvalSession"]()
