"""pytest collection nodes: a definition file collects one item per group × variant × trial."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import TerminalRepr

from .definitions import (
    VARIANTS,
    DefinitionError,
    LoadedGroup,
    SelectionError,
    select,
)
from .errors import DiskFullError, EvidenceError, SkillEvalError
from .evidence import FAILING_RUN_STATES
from .hosts.registry import registration_for
from .nodeids import DEFAULT_HOST, item_name
from .run import GroupRun
from .run.preflight import Findings, check_resources, check_scripts, check_skills
from .run.resume import item_properties
from .run.variant import run_variant
from .session import DISK_FULL_STOP, SESSION_KEY, SkillEvalSession
from .subresults import grade_problem, log_subresults, run_problem
from .views.places import shown_path
from .views.present import reused_label, run_cost_label


class SkillEvalFailure(SkillEvalError):
    """An item's outcome is failed by the fail-on policy; the message is the whole story."""


class UndeclaredToolWarning(pytest.PytestWarning):
    """A script calls a tool its group does not declare (it may be meant: a warning only)."""


class ToolArgumentWarning(pytest.PytestWarning):
    """A script calls a neutral tool with arguments it does not take (the host will refuse the
    call; a recorded cassette may mean it: a warning only)."""


class SkillLintWarning(pytest.PytestWarning):
    """A declared skill breaks the Agent Skills specification, or a host would offer the model
    less of it than it says (a cut description or catalog)."""


class DefinitionCollectionError(SkillEvalError):
    """A definition file is invalid; shown without a traceback."""


def collect_definitions(config: pytest.Config, state: SkillEvalSession) -> None:
    """Collect the definitions themselves, in place of the default test paths."""
    paths = state.settings.paths
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = [str(p) for p in paths]
    else:
        config.args = [*config.args, *(str(p) for p in paths if str(p) not in config.args)]


def collector_for(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Definition files named by --skill-eval become SkillEvalFile collectors."""
    state = parent.config.stash[SESSION_KEY]
    if any(_same(file_path, p) for p in state.settings.paths):
        return SkillEvalFile.from_parent(parent, path=file_path)
    return None


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


_FAILED_PARAMS = re.compile(
    r"\[(?:baseline|candidate|comparison)"
    r"(?:@(?P<host>[a-z][a-z0-9]*(?:-[a-z0-9]+)*?))?(?:-trial(?P<trial>\d+))?\]$"
)
_WIDENED = pytest.StashKey[list[Any]]()


def widen_last_failed(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--lf`/`--ff` rerun every variant of a group (one trial) that had a failure.

    pytest's last-failed plugin knows the failed node ids: items, and the checks and comparisons
    logged under `file::group::name[params]`. It keeps only items whose own id failed, so each
    item of a group with any failure is named failed for this selection (and forgotten again
    at `pytest_collection_finish`, so the cache keeps what really failed).
    """
    plugin = config.pluginmanager.get_plugin("lfplugin")
    # Keyed by pytest's NodeId (pytest 9), whose str() is the familiar node id.
    lastfailed: dict[Any, bool] | None = getattr(plugin, "lastfailed", None)
    if not getattr(plugin, "active", False) or not lastfailed:
        return
    failed_scopes = {s for s in (_failed_scope(str(k)) for k in lastfailed) if s is not None}
    added = []
    for item in items:
        if not isinstance(item, VariantItem) or item.id in lastfailed:
            continue
        if _scope(item) in failed_scopes:
            lastfailed[item.id] = True
            added.append(item.id)
    config.stash[_WIDENED] = added


def forget_widened(config: pytest.Config) -> None:
    """Take back the failures `widen_last_failed` lent the last-failed plugin."""
    plugin = config.pluginmanager.get_plugin("lfplugin")
    lastfailed: dict[Any, bool] = getattr(plugin, "lastfailed", {})
    for nodeid in config.stash.get(_WIDENED, []):
        lastfailed.pop(nodeid, None)


def _scope(item: VariantItem) -> tuple[str, str, int, str]:
    file_id = item.nodeid.rsplit("::", 1)[0]
    run = item.group_run
    return file_id, run.loaded.group.id, run.trial, run.host


def _failed_scope(nodeid: str) -> tuple[str, str, int, str] | None:
    """`file::group[variant…]` or `file::group::name[params]` → (file, group, trial, host)."""
    match = _FAILED_PARAMS.search(nodeid)
    if match is None:
        return None
    head = nodeid[: match.start()]
    parts = head.split("::")
    if len(parts) < 2:
        return None
    file_id, group_id = (parts[0], parts[1])
    return file_id, group_id, int(match["trial"] or 1), match["host"] or DEFAULT_HOST


def record_selection(state: SkillEvalSession, items: list[pytest.Item]) -> None:
    """After -k/-m/--lf deselection, record which variants of each group will really run."""
    chosen: dict[int, set[str]] = {}
    for item in items:
        if isinstance(item, VariantItem):
            chosen.setdefault(id(item.group_run), set()).add(item.variant)
    for run in state.group_runs.values():
        picked = chosen.get(id(run), set())
        run.selected = {v: run.selected.get(v, False) and v in picked for v in VARIANTS}


class SkillEvalFile(pytest.File):
    """A suite or group definition given with --skill-eval."""

    def collect(self) -> Iterator[pytest.Item]:
        """One item per selected group × variant × trial."""
        state = self.config.stash[SESSION_KEY]
        settings = state.settings
        try:
            loaded = state.services.definition(self.path)  # loaded once per process
            selection = select(loaded, settings.group_selectors, settings.variant_selector)
        except DefinitionError as error:
            raise DefinitionCollectionError(str(error)) from None
        except SelectionError as error:
            raise DefinitionCollectionError(f"{self.path}: {error}") from None
        units = []
        for chosen in selection:
            for host in state.services.hosts_for(chosen.loaded):
                units += [(trial, chosen, host) for trial in range(1, settings.trials + 1)]
        refused = self._preflight(state, units)
        if settings.adaptive:
            # Trial-major: every unit a decision waits for comes before it, in every worker's
            # queue, so waiting on an earlier trial can never wait on itself.
            units.sort(key=lambda unit: unit[0])
        for trial, chosen, host in units:
            group = chosen.loaded.group
            # A host the invocation chose that cannot run the group: a fact of that host, so
            # its items are skips (a declared runtime.host it cannot run is refused on load).
            reason = group.cannot_run(host) if settings.hosts else None
            reason = reason or refused.get((group.id, host))
            chosen_host = host if settings.hosts else None
            run = None if reason else self._group_run(chosen.loaded, trial, chosen_host)
            if run is not None:
                run.selected = dict(chosen.variants)
            for variant, selected in chosen.variants.items():
                if not selected:
                    continue
                name = item_name(group.id, variant, trial, settings.trials, host)
                if run is None:
                    yield CannotRunItem.from_parent(
                        self, name=name, host=host, reason=str(reason),
                        keywords=(group.id, variant, f"trial{trial}", host),
                    )  # fmt: skip
                else:
                    yield VariantItem.from_parent(self, name=name, group_run=run, variant=variant)

    def _group_run(self, loaded: LoadedGroup, trial: int, host: str | None) -> GroupRun:
        """The group's run on `host` (None: its declared host); a group whose environment names
        a variable of the host's isolation is a collection error."""
        try:
            return self.config.stash[SESSION_KEY].group_run(loaded, trial, host)
        except DefinitionError as error:
            raise DefinitionCollectionError(str(error)) from None

    def _preflight(
        self, state: SkillEvalSession, units: list[tuple[int, Any, str]]
    ) -> dict[tuple[str, str], str]:
        """Refuse before anything runs what the selected items would fail on: a declared
        resource that is not there, a skill no host can run (or the declared host refuses), a
        script that is missing (replaying) or invalid; warn of scripted tool calls with wrong
        arguments and of skills a host would cut. (group id, host) → why a chosen host would
        refuse a skill of the group: its items are skips."""
        settings = state.settings
        findings = Findings()
        by_group: dict[str, tuple[LoadedGroup, set[str], list[tuple[str, int, str]]]] = {}
        for trial, chosen, host in units:
            if settings.hosts and chosen.loaded.group.cannot_run(host):
                continue  # its items are skips: nothing of it runs
            loaded = chosen.loaded
            entry = by_group.setdefault(loaded.group.id, (loaded, set(), []))
            for variant, selected in chosen.variants.items():
                if selected:
                    entry[1].add(variant)
                    entry[2].append((variant, trial, host))
        refused: dict[tuple[str, str], str] = {}
        for loaded, variants, script_units in by_group.values():
            chosen_variants = [v for v in VARIANTS if v in variants]
            missing = check_resources(
                loaded, chosen_variants, settings.root, state.services.resolver
            )
            findings.problems += missing
            if not missing:
                hosts = dict.fromkeys(host for _, _, host in script_units)
                linted = check_skills(
                    loaded, chosen_variants, settings.root, state.services.resolver,
                    [registration_for(host) for host in hosts],
                )  # fmt: skip
                findings.problems += linted.problems
                findings.skills += linted.skills
                for host, reason in linted.refused.items():
                    if not settings.hosts:  # the group's own host: nothing can run it
                        findings.problems.append(f"{loaded.path}: cannot run on {host}: {reason}")
                    refused[(loaded.group.id, host)] = reason
                script_units = [u for u in script_units if u[2] not in linted.refused]
            if settings.cassettes is not None:
                found = check_scripts(loaded, script_units, settings.cassettes, settings.record)
                findings.problems += found.problems
                findings.undeclared += found.undeclared
                findings.arguments += found.arguments
        for warning in dict.fromkeys(findings.undeclared):
            self.warn(UndeclaredToolWarning(warning))
        for warning in dict.fromkeys(findings.arguments):
            self.warn(ToolArgumentWarning(warning))
        for warning in dict.fromkeys(findings.skills):
            self.warn(SkillLintWarning(warning))
        if findings.problems:
            raise DefinitionCollectionError("\n".join(dict.fromkeys(findings.problems)))
        return refused

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        """Definition errors are one clear line, never a traceback."""
        if isinstance(excinfo.value, DefinitionCollectionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class CannotRunItem(pytest.Item):
    """A variant of a group on a host the invocation chose that cannot run it: a skip saying
    why (the invocation record lists it, so the views and the cross-host table show it)."""

    def __init__(self, *, host: str, reason: str, keywords: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.host = host
        self.reason = reason
        for keyword in keywords:  # -k selects it as it would the variant's item
            self.keywords[keyword] = True

    def runtest(self) -> None:
        """Skip, naming the host and what it lacks."""
        pytest.skip(f"cannot run on {self.host}: {self.reason}")

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the item comes from: the definition file."""
        return self.path, None, self.name


# The item pytest runs after this one in this process (`pytest_runtest_protocol`'s `nextitem`).
NEXT_ITEM = pytest.StashKey[pytest.Item | None]()


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
        self.keywords[group_run.host] = True

    def runtest(self) -> None:
        """Run the variant, report its checks, and apply the fail-on policy."""
        try:
            self._runtest()
        except DiskFullError as error:
            # Every later write would fail the same way: stop here, this failure says why.
            state = self.config.stash[SESSION_KEY]
            self.session.shouldstop = DISK_FULL_STOP
            state.disk_full_reported = True
            state.services.cancel.cancel("cancelled")
            raise SkillEvalFailure(str(error)) from None
        except EvidenceError as error:
            raise SkillEvalFailure(f"evidence could not be written: {error}") from None

    def _runtest(self) -> None:
        state = self.config.stash[SESSION_KEY]
        run = self.group_run
        if state.settings.adaptive:
            stop = state.adaptive_stop(run)
            if stop is not None:
                pytest.skip(stop.message(run.trial))
        env = dataclasses.replace(state.services.environment(), next_run=self._next_run())
        record = run_variant(run, self.variant, env)
        evidence = shown_path(
            run.group_dir / self.variant, self.config.rootpath, run.group_dir.parents[2]
        )
        self.user_properties.append(("evidence", evidence))  # shared in JUnit: never absolute
        self.user_properties.extend(item_properties(run.group_dir, record))
        if "reused" in record:  # copied from an earlier sealed result, not run here
            self.user_properties.append(("reused", reused_label(record["reused"])))
        cost = run_cost_label(record)
        if cost is not None:
            self.user_properties.append(("cost", cost))
        problems = []
        if record["state"] in FAILING_RUN_STATES:
            problems.append(run_problem(self.variant, record))
        if self.variant == last_selected(run):
            outcome = run.finalise(state.services.environment())
            grade = outcome["grade"]
            if grade["state"] == "grade-error":
                problems.append(grade_problem(grade))
            comparisons = grade["comparisons"]
        else:
            grade = state.preview_grade(run, self.variant)
            comparisons = []
        checks = [c for c in grade["checks"] if c["variant"] == self.variant]
        log_subresults(self, run, self.variant, checks, comparisons, state.settings.fail_on)
        if problems:
            raise SkillEvalFailure("\n".join(problems))

    def _next_run(self) -> GroupRun | None:
        """The group whose first variant's item this process runs next, when it is another
        group's; never under adaptive trials (the sequential test may skip that item)."""
        following = self.stash.get(NEXT_ITEM, None)
        if not isinstance(following, VariantItem) or following.group_run is self.group_run:
            return None
        state = self.config.stash[SESSION_KEY]
        run = following.group_run
        # Nor the first group of a trial whose result does not exist yet: a pre-start never
        # creates a result (a session stopped first would then record that trial).
        if state.settings.adaptive or run.trial not in state.services.result_dirs:
            return None
        first = next((v for v in VARIANTS if run.selected.get(v)), None)
        return run if following.variant == first else None

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
    chosen = [v for v in VARIANTS if run.selected.get(v)]
    return chosen[-1] if chosen else "candidate"
