"""pytest hooks, top to bottom in the order pytest calls them; each delegates.

options/        the on switch and the declared options (light); `settings.py`: the frozen Settings
session/        per-process state and services (SESSION_KEY beside SkillEvalSession)
items.py        definitions become items; an item runs one variant
subresults.py   checks and comparisons as reports and JUnit rows, fail-on, teststatus
xdist.py        distribution, scheduling, the worker hand-off, forwarded sub-reports
features/       the loop features, one plugin object each (registered at configure)

pytest loads this module in every run of a project that has the plugin installed, with or
without --skill-eval, and in each of its xdist workers. So it imports only what declares the
options (as Hypothesis's entry point does): each hook returns at once unless the plugin is
enabled, and imports the layers below it then (`tests/plugin/test_not_enabled.py`).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.reports import TestReport
from _pytest.terminal import TerminalReporter

from . import features, rootdir
from .options import declared, enabled, is_worker

if TYPE_CHECKING:
    from .views.decision import Decided


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register --skill-eval options and their ini keys, and each loop feature's own."""
    declared.add_options(parser, features.fail_on_modes())
    features.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    """Option values (`--skill-eval-pi /x/bin/pi`) never choose the rootdir or the ini file."""
    rootdir.rediscover_rootdir(early_config, parser, args)


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, object, object]:
    """`-n N` alone keeps each group's variants together on one worker, in order."""
    if enabled(config):
        from . import xdist

        xdist.default_distribution(config)
    return (yield)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With `-n N` alone, schedule one work unit per group and trial."""
    if not enabled(config):
        return None
    from . import xdist

    return xdist.make_scheduler(config, log)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Create per-invocation state; the controller makes result ids and pins inputs; then each
    loop feature this process runs is registered (`features.REGISTERED`)."""
    if not enabled(config):
        return
    from . import subresults, xdist
    from .items import collect_definitions
    from .options import usage_errors
    from .options.settings import Settings
    from .session import open_session

    modes = tuple(mode for mode, _ in features.fail_on_modes())
    settings = Settings.from_config(config, modes)
    with usage_errors():
        features.check_options(config, settings)
    worker = is_worker(config)
    state = open_session(config, settings, worker=worker, workers=xdist.worker_count(config))
    if worker:
        xdist.take_from_controller(config, state)
    else:
        with usage_errors():  # a full results disk is one line, not an INTERNALERROR
            state.prepare_controller()
    features.register(config, state)
    subresults.register(config)
    collect_definitions(config, state)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hand result ids, pinned Git commits and the checked Pi to each xdist worker."""
    if enabled(node.config):
        from . import xdist

        xdist.hand_to_worker(node)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Definition files named by --skill-eval become SkillEvalFile collectors."""
    if not enabled(parent.config):
        return None
    from .items import collector_for

    return collector_for(file_path, parent)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--lf`/`--ff` take every variant of a group that had a failure, never one alone."""
    if enabled(config):
        from .items import widen_last_failed

        widen_last_failed(config, items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """After -k/-m/--lf deselection, record which variants of each group will really run."""
    if enabled(session.config):
        from . import xdist
        from .items import forget_widened, record_selection
        from .session import SESSION_KEY

        forget_widened(session.config)
        record_selection(session.config.stash[SESSION_KEY], session.items)
        xdist.settle_worker(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Remember what the workers will run, to record what they never got to."""
    if enabled(node.config):
        from . import xdist

        xdist.note_collected(node, ids)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """A worker stopped by a full results disk stops the controller's writing too."""
    if enabled(node.config):
        from . import xdist

        xdist.note_node_down(node)


def pytest_sessionstart(session: pytest.Session) -> None:
    """First Ctrl-C cancels cleanly (evidence kept, the rest cancelled); the second stops now."""
    if enabled(session.config):
        from .session import SESSION_KEY

        session.config.stash[SESSION_KEY].install_interrupt_handler(session)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """Tell a group's item which item this process runs next (its subject may pre-start it)."""
    if enabled(item.config):
        from .items import NEXT_ITEM, VariantItem

        if isinstance(item, VariantItem):
            item.stash[NEXT_ITEM] = nextitem
    return (yield)


def pytest_report_teststatus(
    report: TestReport, config: pytest.Config
) -> tuple[str, str, Any] | None:
    """Sub-results show their evidence state (and, with -v, expected and observed)."""
    if not enabled(config):
        return None
    from . import subresults

    return subresults.teststatus(report, config)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
    """Finalise groups left half-run, then (controller) write each result's summary and seal;
    first, so the features' wrappers (the gates) see the finished results."""
    if enabled(session.config):
        from . import subresults
        from .session import SESSION_KEY

        state = session.config.stash[SESSION_KEY]
        state.finish(session)
        # Before junitxml writes its file (a plain hook, run after the wrappers' first halves).
        subresults.record_seals(session.config, state.services.result_dirs, state.settings.trials)
    return (yield)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_terminal_summary(
    terminalreporter: TerminalReporter, config: pytest.Config
) -> Generator[None, None, None]:
    """Per group: states, checks, transitions, cost, and where the evidence is; then each
    feature's lines (its own hook); last, an error no item reported."""
    worker = is_worker(config)
    if not enabled(config) and not worker:
        from .options.nearby import not_enabled_hint

        given = [
            key
            for key in (*declared.INI_KEYS, *features.ini_keys())
            if config.getini(key) not in (None, "", [], False)
        ]
        hint = not_enabled_hint(Path(config.invocation_params.dir), given, config.inipath)
        if hint is not None:
            terminalreporter.write_line(hint, yellow=True)
    if not enabled(config) or worker or config.option.collectonly:
        return (yield)
    from . import subresults
    from .evidence.read import ReadError, read_once
    from .session import SESSION_KEY
    from .views.terminal import terminal_summary  # the controller's alone: workers never need it

    subresults.name_check_counts(terminalreporter)
    state = config.stash[SESSION_KEY]
    shard = state.services.shard_dir is not None
    gate = config.stash.get(features.GATE_KEY, None)
    forecast: list[str] = config.stash.get(features.FORECAST_KEY, [])
    try:
        with read_once():  # both views read the same finished results
            terminal_summary(
                terminalreporter,
                state.services.result_dirs,
                state.aggregate_dir,
                shard=shard,
                cwd=Path(config.invocation_params.dir),
                gate=gate,
                forecast=forecast,
            )
            _step_summary(
                terminalreporter, state.services.result_dirs, state.aggregate_dir, shard, gate
            )
    except ReadError as error:  # a result changed under the run, or written wrong: one line
        terminalreporter.write_line(
            f"skill-eval: the summary cannot be shown: {error}; `skill-eval verify` on the "
            "result checks every file",
            red=True,
        )
    try:
        return (yield)
    finally:
        if state.unreported_error is not None:
            terminalreporter.write_line(f"skill-eval: {state.unreported_error}", red=True)


def _step_summary(
    writer: TerminalReporter,
    result_dirs: dict[int, Path],
    aggregate: Path | None,
    shard: bool,
    gate: Decided | None,
) -> None:
    """Append the Markdown summary to the CI job page when `GITHUB_STEP_SUMMARY` names one."""
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    finished = [d for _, d in sorted(result_dirs.items()) if d.is_dir()]
    if not summary_file or shard or not finished:
        return
    from .errors import SkillEvalError
    from .views.summary import append_step_summary

    try:
        append_step_summary(
            aggregate if aggregate is not None else finished[-1], summary_file, gate
        )
    except SkillEvalError as error:
        writer.write_line(f"skill-eval: {error}", red=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the loopback model server; unregister what pytest_configure registered."""
    if not enabled(config):
        return
    from . import subresults
    from .session import close_session

    features.unregister(config)
    close_session(config)
    subresults.unregister(config)
