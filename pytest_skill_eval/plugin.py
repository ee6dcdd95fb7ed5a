"""pytest hooks: options, collection entry, xdist wiring, sub-result reporting, summaries."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Generator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from _pytest.reports import TestReport
from _pytest.terminal import TerminalReporter

from .budget import Ledger
from .definitions import DefinitionError, load_definition
from .evidence import layout, read
from .evidence.store import utc_now
from .evidence.summary import write_invocation, write_summary
from .hosts.pi.binary import PiBinary, PiNotFoundError
from .items import SESSION_KEY, SkillEvalFile, VariantItem, parse_item_id
from .run import GroupRun
from .session import FAIL_ON, SkillEvalSession, is_worker
from .trials import write_aggregate
from .views.terminal import terminal_summary
from .workspace import ResourceError, SourceResolver

GROUP_SCHEDULING = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register --skill-eval options and their ini keys."""
    group = parser.getgroup("skill-eval", "skill evaluation (pytest-skill-eval)")
    group.addoption(
        "--skill-eval",
        action="append",
        default=[],
        metavar="PATH",
        help="suite or group definition (JSON) to evaluate; repeatable. Without it the plugin "
        "collects nothing.",
    )
    options: list[tuple[str, str, dict[str, Any]]] = [
        (
            "root",
            "DIR",
            {
                "help": "definition root (default: current directory); containment is "
                "checked against its canonical path"
            },
        ),
        ("group", "ID|POS", {"help": "select one group by id or one-based suite position"}),
        (
            "variant",
            "baseline|candidate",
            {"help": "run only this variant; the other is recorded not-selected"},
        ),
        (
            "trials",
            "N",
            {"type": int, "help": "independent complete results to produce (default 1)"},
        ),
        ("results", "DIR", {"help": "where results go (default <root>/.skill-eval/runs)"}),
        (
            "pi",
            "PATH",
            {
                "help": "the Pi binary (default: pi on PATH, else node_modules/.bin/pi under "
                "the root or this package)"
            },
        ),
        (
            "cassettes",
            "DIR",
            {
                "help": "scripts/cassettes directory: subjects talk only to the "
                "loopback model server, which replays <DIR>/<group>/"
                "<variant>.yaml"
            },
        ),
        (
            "record",
            "none|once|all",
            {"help": "record mode with --skill-eval-cassettes (default none: replay only)"},
        ),
        (
            "fail-on",
            "|".join(FAIL_ON),
            {
                "help": "what fails the pytest run: infrastructure "
                "(default), candidate, any, regression"
            },
        ),
        (
            "max-cost",
            "USD",
            {"type": float, "help": "spend ceiling shared by every worker and trial"},
        ),
        (
            "no-progress-timeout",
            "SECONDS",
            {
                "type": float,
                "help": "stop a subject that prints nothing for this long (default 1800)",
            },
        ),
    ]
    for name, metavar, extra in options:
        group.addoption(f"--skill-eval-{name}", metavar=metavar, default=None, **extra)
        parser.addini(f"skill_eval_{name.replace('-', '_')}", extra["help"], default=None)
    parser.addini(
        "skill_eval_pi_auth",
        "path of a Pi auth.json installed into each subject's isolated agent directory",
        default=None,
    )
    parser.addini(
        "skill_eval_upstream_url",
        "base URL of the real provider when recording (default: the provider's own)",
        default=None,
    )
    parser.addini(
        "skill_eval_pi_models",
        "path of a Pi models.json installed into each subject's isolated agent directory",
        default=None,
    )


def enabled(config: pytest.Config) -> bool:
    """The plugin acts only when --skill-eval was given."""
    return bool(config.getoption("--skill-eval"))


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, object, object]:
    """`-n N` alone keeps each group's variants together on one worker, in order."""
    # A wrapper runs before xdist's own tryfirst hook, which turns an unset --dist into "load".
    if (
        enabled(config)
        and getattr(config.option, "numprocesses", None)
        and getattr(config.option, "dist", "no") == "no"
    ):
        config.option.dist = "loadscope"
        config.stash[GROUP_SCHEDULING] = True
    return (yield)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With `-n N` alone, schedule one work unit per group and trial (see scheduling.py)."""
    if not config.stash.get(GROUP_SCHEDULING, False):
        return None
    from .scheduling import GroupScheduling

    return GroupScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Create per-invocation state; the controller makes result ids and pins inputs."""
    if not enabled(config):
        return
    state = SkillEvalSession(config)
    config.stash[SESSION_KEY] = state
    config.pluginmanager.register(state, "skill-eval-session")
    if is_worker(config):
        handed: dict[str, Any] = config.workerinput["skill_eval"]  # type: ignore[attr-defined]
        state.result_dirs = {int(k): Path(v) for k, v in handed["results"].items()}
        state.resolver = SourceResolver(state.root, pinned=handed["pins"])
        if handed.get("ledger"):
            state.ledger = Ledger(Path(handed["ledger"]), float(handed["maxCost"]))
        if handed.get("pi"):
            state._pi = PiBinary(Path(handed["pi"]["path"]), handed["pi"]["version"])
    else:
        _controller_setup(config, state)
    # Collect the definitions themselves, in place of the default test paths.
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = [str(p) for p in state.paths]
    else:
        config.args = [*config.args, *(str(p) for p in state.paths if str(p) not in config.args)]


def _controller_setup(config: pytest.Config, state: SkillEvalSession) -> None:
    if not config.option.collectonly:
        try:
            state.pi()
        except PiNotFoundError as error:
            raise pytest.UsageError(str(error)) from None
    definitions = []
    for path in state.paths:
        try:
            loaded = load_definition(path, state.root)
        except DefinitionError:
            continue  # reported as a collection error, with its pointer
        definitions.append(loaded)
        state.loaded_groups.update({g.group.id: g for g in loaded.groups})
        for group in loaded.groups:
            for variant in group.group.variants.values():
                if variant.source.kind == "git":
                    # An unresolvable ref is recorded by the variant when it runs.
                    with contextlib.suppress(ResourceError):
                        state.resolver.resolve("git", variant.source.ref)
    if config.option.collectonly:
        return
    if state.max_cost is not None:
        state.results_dir.mkdir(parents=True, exist_ok=True)
        ledger_dir = Path(tempfile.mkdtemp(prefix=".budget-", dir=state.results_dir))
        state.ledger = Ledger.create(ledger_dir / "ledger.json", state.max_cost)
    for trial in range(1, state.trials + 1):
        result_dir = state.result_dir(trial)
        write_invocation(
            result_dir,
            {
                "schema_version": 1,
                "id": result_dir.name,
                "root": str(state.root),
                "definitions": [
                    {
                        "path": str(d.path),
                        "kind": d.kind,
                        "id": d.id,
                        "groups": [
                            {
                                "id": g.group.id,
                                "position": g.position,
                                "path": str(g.path),
                                "sha256": g.sha256,
                            }
                            for g in d.groups
                        ],
                    }
                    for d in definitions
                ],
                "selection": {
                    "group": state.group_selector,
                    "variant": state.variant_selector,
                    "trial": trial,
                    "trials": state.trials,
                },
                "pins": state.resolver.pinned(),
                "provider": {
                    "cassettes": str(state.cassettes) if state.cassettes else None,
                    "record": state.record,
                },
                "failOn": state.fail_on,
                "startedAt": utc_now(),
            },
        )


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hand result ids, pinned Git commits and the checked Pi to each xdist worker."""
    config = node.config
    if not enabled(config):
        return
    state: SkillEvalSession = config.stash[SESSION_KEY]
    pi = state._pi
    node.workerinput["skill_eval"] = {
        "results": {str(k): str(v) for k, v in state.result_dirs.items()},
        "pins": state.resolver.pinned(),
        "pi": {"path": str(pi.path), "version": pi.version} if pi else None,
        "ledger": str(state.ledger.path) if state.ledger else None,
        "maxCost": state.max_cost,
    }


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Definition files named by --skill-eval become SkillEvalFile collectors."""
    config = parent.config
    if not enabled(config):
        return None
    state: SkillEvalSession = config.stash[SESSION_KEY]
    if any(_same(file_path, p) for p in state.paths):
        return SkillEvalFile.from_parent(parent, path=file_path)
    return None


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After -k/-m/--lf deselection, record which variants of each group will really run."""
    if not enabled(config):
        return
    chosen: dict[int, set[str]] = {}
    runs: dict[int, GroupRun] = {}
    for item in items:
        if isinstance(item, VariantItem):
            chosen.setdefault(id(item.group_run), set()).add(item.variant)
            runs[id(item.group_run)] = item.group_run
    state: SkillEvalSession = config.stash[SESSION_KEY]
    for run in state.group_runs.values():
        picked = chosen.get(id(run), set())
        run.selected = {
            v: run.selected.get(v, False) and v in picked for v in ("baseline", "candidate")
        }


def pytest_report_teststatus(
    report: TestReport, config: pytest.Config
) -> tuple[str, str, Any] | None:
    """Sub-results show their evidence state (and, with -v, expected and observed)."""
    props = dict(getattr(report, "user_properties", []) or [])
    kind = props.get("skill_eval_kind")
    if kind is None or report.when != "call":
        if kind is not None:
            return "", "", ""
        return None
    state = str(props.get("state"))
    word = state.upper()
    if config.get_verbosity() >= 1 and kind == "check":
        expected, observed = _clip(props.get("expected")), _clip(props.get("observed"))
        word = f"{word} expected={expected} observed={observed}"
    if report.failed:
        return "failed", "F", (word, {"red": True})
    if kind == "comparison":
        return "transitions", "t", (word, {"cyan": True})
    letter = {"pass": ".", "fail": "f", "unavailable": "u"}.get(state, "?")
    category = {
        "pass": "checks passed",
        "fail": "checks failed",
        "unavailable": "checks unavailable",
    }
    markup = {"pass": {"green": True}, "fail": {"yellow": True}, "unavailable": {"yellow": True}}
    return category.get(state, "checks"), letter, (word, markup.get(state, {}))


def _clip(value: Any, limit: int = 160) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pytest_sessionstart(session: pytest.Session) -> None:
    """First Ctrl-C cancels cleanly (evidence kept, the rest cancelled); the second stops now."""
    if not enabled(session.config) or threading.current_thread() is not threading.main_thread():
        return
    state: SkillEvalSession = session.config.stash[SESSION_KEY]
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: FrameType | None) -> None:
        if state.cancel.cancelled:
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        state.cancel.cancel("cancelled")
        session.shouldstop = "skill-eval: cancelled by Ctrl-C (press again to stop at once)"

    signal.signal(signal.SIGINT, handler)


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
    """Finalise groups left half-run, then (controller) write each result's summary.json."""
    config = session.config
    if enabled(config):
        state: SkillEvalSession = config.stash[SESSION_KEY]
        # Groups stopped half-way, and, once a session has run items (outside xdist workers,
        # whose groups other workers may own), selected groups that never started are recorded
        # with the rest `cancelled`.
        stopped_early = state.items_started and not is_worker(config)
        for run in state.group_runs.values():
            selected = any(run.selected.values())
            if run.finished is None and (run.started or (selected and stopped_early)):
                run.finalise(state.environment())
        if stopped_early:
            _finalise_unstarted(state)
            budget = state.ledger.snapshot() if state.ledger else None
            for trial, result_dir in sorted(state.result_dirs.items()):
                write_summary(result_dir, trial, budget)
            if state.trials > 1:
                state.aggregate_dir = write_aggregate(
                    state.results_dir,
                    [state.result_dirs[t] for t in sorted(state.result_dirs)],
                    state.trials,
                    budget,
                )
            if state.ledger is not None:
                shutil.rmtree(state.ledger.path.parent, ignore_errors=True)
        if state.cancel.cancelled and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
    return (yield)


def _finalise_unstarted(state: SkillEvalSession) -> None:
    """xdist controller: groups the workers collected but never finished become `cancelled`."""
    for (group_id, trial), variants in sorted(state.collected.items()):
        loaded = state.loaded_groups.get(group_id)
        result_dir = state.result_dirs.get(trial)
        if loaded is None or result_dir is None:
            continue
        if read.group_record(layout.group_dir(result_dir, group_id)) is not None:
            continue
        run = GroupRun(loaded, state.result_dir, trial)
        run.selected = {v: v in variants for v in ("baseline", "candidate")}
        state.cancel.cancel("cancelled")
        run.finalise(state.environment())


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Remember what the workers will run, to record what they never got to."""
    config = node.config
    if not enabled(config) or SESSION_KEY not in config.stash:
        return
    state: SkillEvalSession = config.stash[SESSION_KEY]
    for nodeid in ids:
        parsed = parse_item_id(nodeid)
        if parsed is not None:
            group_id, variant, trial = parsed
            state.collected.setdefault((group_id, trial), set()).add(variant)


def pytest_terminal_summary(terminalreporter: TerminalReporter, config: pytest.Config) -> None:
    """Per group: states, checks, transitions, cost, and where the evidence is."""
    if not enabled(config) or is_worker(config) or config.option.collectonly:
        return
    state: SkillEvalSession = config.stash[SESSION_KEY]
    terminal_summary(terminalreporter, state.result_dirs, state.aggregate_dir)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the loopback model server."""
    if enabled(config) and SESSION_KEY in config.stash:
        config.stash[SESSION_KEY].endpoints.close()
