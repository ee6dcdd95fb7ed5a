"""Per-process state of an invocation: options, result directories, services, sub-results."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from _pytest.reports import TestReport

from .budget import Ledger
from .definitions import LoadedGroup
from .evidence import create_result_dir
from .grading import grade_group
from .hosts.pi.binary import PiBinary, check_pi, locate_pi
from .hosts.process import NO_PROGRESS_S, CancelToken
from .items import VariantItem, sub_report
from .providers import RECORD_MODES, EndpointFactory
from .run import Environment, GroupRun, synthetic_run
from .views.present import describe
from .workspace import SourceResolver

FAIL_ON = ("infrastructure", "candidate", "any", "regression")


def option(config: pytest.Config, name: str) -> Any:
    """A --skill-eval-NAME option, else its skill_eval_NAME ini key."""
    value = config.getoption(f"--skill-eval-{name}")
    if value is None:
        value = config.getini(f"skill_eval_{name.replace('-', '_')}")
    return value


class SkillEvalSession:
    """Per-process state: options, result directories, services, and group runs."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.root = Path(option(config, "root") or config.invocation_params.dir).resolve()
        if not self.root.is_dir():
            raise pytest.UsageError(f"--skill-eval-root {self.root} is not a directory")
        self.paths = [self._path(p) for p in config.getoption("--skill-eval")]
        self.group_selector: str | None = option(config, "group")
        self.variant_selector: str | None = option(config, "variant")
        if self.variant_selector not in (None, "baseline", "candidate"):
            raise pytest.UsageError(
                f"--skill-eval-variant must be baseline or candidate, not {self.variant_selector!r}"
            )
        self.trials = _int_option(config, "trials", 1)
        self.fail_on = option(config, "fail-on") or "infrastructure"
        if self.fail_on not in FAIL_ON:
            raise pytest.UsageError(
                f"--skill-eval-fail-on must be one of {', '.join(FAIL_ON)}, not {self.fail_on!r}"
            )
        results = option(config, "results")
        self.results_dir = (
            Path(results).resolve() if results else self.root / ".skill-eval" / "runs"
        )
        cassettes = option(config, "cassettes")
        self.cassettes = Path(cassettes).resolve() if cassettes else None
        self.record = option(config, "record") or "none"
        if self.record not in RECORD_MODES:
            raise pytest.UsageError(f"--skill-eval-record must be one of {', '.join(RECORD_MODES)}")
        if self.cassettes is not None and not self.cassettes.is_dir() and self.record == "none":
            raise pytest.UsageError(f"--skill-eval-cassettes {self.cassettes} is not a directory")
        if self.record != "none" and self.cassettes is None:
            raise pytest.UsageError(
                f"--skill-eval-record {self.record} needs --skill-eval-cassettes DIR to write to"
            )
        timeout = option(config, "no-progress-timeout")
        self.no_progress_s = float(timeout) if timeout else NO_PROGRESS_S
        self.cancel = CancelToken()
        self.resolver = SourceResolver(self.root)
        self.result_dirs: dict[int, Path] = {}
        self.group_runs: dict[tuple[Path, str, int], GroupRun] = {}
        # xdist controller only: what the workers collected, and the groups it can finalise.
        self.collected: dict[tuple[str, int], set[str]] = {}
        self.loaded_groups: dict[str, LoadedGroup] = {}
        self.items_started = False
        max_cost = option(config, "max-cost")
        self.max_cost = float(max_cost) if max_cost not in (None, "") else None
        if self.max_cost is not None and not self.max_cost > 0:
            raise pytest.UsageError(
                f"--skill-eval-max-cost must be a positive number, not {max_cost!r}"
            )
        self.ledger: Ledger | None = None
        self.aggregate_dir: Path | None = None
        self._pi: PiBinary | None = None
        self._pi_lock = threading.Lock()
        self.endpoints = EndpointFactory(
            cassettes=self.cassettes,
            record=self.record,
            auth=_ini_path(config, "skill_eval_pi_auth"),
            models=_ini_path(config, "skill_eval_pi_models"),
            upstream_url=config.getini("skill_eval_upstream_url") or None,
        )

    def _path(self, raw: str) -> Path:
        path = Path(raw)
        return path if path.is_absolute() else Path(self.config.invocation_params.dir) / path

    # -- services ---------------------------------------------------------------------------

    def pi(self) -> PiBinary:
        """The checked Pi binary (checked once per process, or handed over by the controller)."""
        with self._pi_lock:
            if self._pi is None:
                self._pi = check_pi(locate_pi(option(self.config, "pi"), self.root))
            return self._pi

    def environment(self) -> Environment:
        """What a group needs to run its subjects in this process."""
        return Environment(
            root=self.root,
            resolver=self.resolver,
            cancel=self.cancel,
            pi=self.pi,
            endpoint=self.endpoints.endpoint,
            no_progress_s=self.no_progress_s,
            ledger=self.ledger,
        )

    def result_dir(self, trial: int) -> Path:
        """The result directory of a trial (created by the controller)."""
        if trial not in self.result_dirs:
            _, path = create_result_dir(self.results_dir)
            self.result_dirs[trial] = path
        return self.result_dirs[trial]

    def group_run(self, loaded: LoadedGroup, trial: int) -> GroupRun:
        """The shared GroupRun of a group in a trial's result."""
        key = (loaded.path, loaded.group.id, trial)
        if key not in self.group_runs:
            self.group_runs[key] = GroupRun(loaded, self.result_dir, trial)
        return self.group_runs[key]

    # -- reporting --------------------------------------------------------------------------

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        """Note that items ran (xdist forwards this to the controller too)."""
        self.items_started = True

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: TestReport) -> None:
        """Sub-results are not items: keep them out of the terminal's progress count."""
        if "skill_eval_kind" not in dict(report.user_properties or []):
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        reported = getattr(reporter, "_progress_nodeids_reported", None)
        if isinstance(reported, set):
            reported.discard(report.id)

    def preview_grade(self, run: GroupRun, variant: str) -> dict[str, Any]:
        """Grade one variant's checks before its counterpart exists (same rules, not persisted)."""
        other = "candidate" if variant == "baseline" else "baseline"
        runs = {
            variant: run.runs[variant],
            other: synthetic_run(run.loaded, other, "not-selected", None),
        }
        dirs = {v: run.group_dir / v for v in runs}
        return grade_group(run.loaded.raw, runs, dirs, dict.fromkeys(runs, ""))

    def report_checks(self, item: VariantItem, checks: list[dict[str, Any]]) -> None:
        """Log one sub-result per check; failures follow --skill-eval-fail-on."""
        for check in checks:
            fails = check["state"] == "fail" and (
                self.fail_on == "any"
                or (self.fail_on == "candidate" and check["variant"] == "candidate")
            )
            self._log(item, check["id"], "check", check, fails)

    def report_comparisons(self, item: VariantItem, comparisons: list[dict[str, Any]]) -> None:
        """Log one sub-result per comparison; `regression` fails pass-to-fail."""
        for comparison in comparisons:
            fails = self.fail_on == "regression" and comparison["transition"] == "pass-to-fail"
            self._log(item, comparison["id"], "comparison", comparison, fails)

    def _log(
        self, item: VariantItem, name: str, kind: str, data: dict[str, Any], fails: bool
    ) -> None:
        state = data["state"] if kind == "check" else data["transition"]
        evidence_dir = item.group_run.group_dir
        props: list[tuple[str, Any]] = [
            ("skill_eval_kind", kind),
            ("state", state),
            ("evidence", str(evidence_dir)),
        ]
        if kind == "check":
            props += [
                ("expected", _compact(data.get("expected"))),
                ("observed", _compact(data.get("observed"))),
            ]
        text = describe(kind, data)
        if fails:
            outcome = "failed"
        elif kind == "check" and state == "unavailable":
            outcome = "skipped"
        else:
            outcome = "passed"
        reports = sub_report(
            item, name, kind, outcome, text if outcome != "passed" else None, props
        )
        # Sub-results are written while the item runs: lift capture so they reach the terminal.
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            for report in reports:
                self._send(item, report)

    def _send(self, item: VariantItem, report: TestReport) -> None:
        interactor = _xdist_interactor(self.config)
        if interactor is None:
            item.ihook.pytest_runtest_logreport(report=report)
            return
        # xdist's worker hook insists a report belongs to the running item; sub-results have
        # their own node ids (one JUnit row each), so they go to the controller directly.
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        data["item_index"] = interactor.item_index
        data["worker_id"] = interactor.workerid
        data["testrun_uid"] = interactor.testrunuid
        interactor.sendevent("testreport", data=data)


def _xdist_interactor(config: pytest.Config) -> Any:
    if not is_worker(config):
        return None
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor" and hasattr(plugin, "sendevent"):
            return plugin
    return None


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _int_option(config: pytest.Config, name: str, default: int) -> int:
    raw = option(config, name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = 0
    if value < 1:
        raise pytest.UsageError(f"--skill-eval-{name} must be a positive integer, not {raw!r}")
    return value


def _ini_path(config: pytest.Config, name: str) -> Path | None:
    raw = config.getini(name)
    if not raw:
        return None
    path = Path(str(raw))
    if not path.is_absolute():
        path = config.rootpath / path
    if not path.is_file():
        raise pytest.UsageError(f"{name} = {raw}: no such file")
    return path


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker."""
    return hasattr(config, "workerinput")
