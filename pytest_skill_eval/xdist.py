"""Everything pytest-xdist: default distribution, the group scheduler, the worker hand-off, and
sub-reports sent to the controller.

The plugin loads without xdist: nothing here imports it at module level, and its hooks are
registered as optional. Each use of an xdist or pytest internal says which versions it was
checked against (pytest 9.2.0, pytest-xdist 3.8.0).
"""

from __future__ import annotations

import functools
import gc
import re
from pathlib import Path
from typing import Any

import pytest
from _pytest.reports import TestReport

from . import hosts
from .budget.ledger_choice import ledger_from
from .nodeids import parse_item_id, scope_of
from .options import enabled, is_worker
from .session import DISK_FULL_STOP, SESSION_KEY, SkillEvalSession
from .workspace import SourceResolver

GROUP_SCHEDULING = pytest.StashKey[bool]()
_COUNT = re.compile(r"^[0-9]+\*")  # the `N*` of `--tx N*popen`

# Stock xdist modes that would split a group's variants over workers, or run every group on
# every worker into the same result directory.
REFUSED_DIST = ("load", "worksteal", "each", "loadfile")
GROUPING_DIST = ("loadscope", "loadgroup")
_WHAT_WORKS = (
    "use -n N alone or --dist loadscope/loadgroup (the plugin keeps each group's variants "
    "together on one worker), or split the run over machines with `skill-eval plan` and "
    "--skill-eval-shard K/N"
)


def worker_count(config: pytest.Config) -> int:
    """How many evaluator processes run this invocation's items: xdist's workers, else 1."""
    count = getattr(config, "workerinput", {}).get("workercount", 1)
    return count if isinstance(count, int) and count > 0 else 1


def default_distribution(config: pytest.Config) -> None:
    """`-n N`, `--dist loadscope` and `--dist loadgroup` keep each group's variants together.

    Modes that split a group, and remote workers, are refused before anything is created.
    Called from a `pytest_cmdline_main` wrapper, which runs before xdist's own tryfirst hook
    turns an unset `--dist` into "load" (checked against pytest-xdist 3.8.0).
    """
    if not enabled(config):
        return
    option = config.option
    specs = list(getattr(option, "tx", None) or [])
    numprocesses = getattr(option, "numprocesses", None)
    if not numprocesses and not specs:
        return  # not distributed: xdist itself resets --dist to "no"
    dist = "load" if getattr(option, "distload", False) else getattr(option, "dist", "no")
    if dist in REFUSED_DIST:
        raise pytest.UsageError(
            f"--dist {dist} would split a group's variants over workers or run it twice, "
            f"which corrupts its evidence; {_WHAT_WORKS}"
        )
    for spec in specs:
        if not _local_popen(str(spec)):
            raise pytest.UsageError(
                f"--tx {spec}: remote or relocated workers write evidence where this "
                "controller cannot read it and resolve paths against their own directory; "
                "run shards instead (`skill-eval plan`, then `pytest --skill-eval-plan PLAN "
                "--skill-eval-shard K/N` on each machine, then `skill-eval merge`), "
                "or use -n N on one machine"
            )
    if dist == "no" or dist in GROUPING_DIST:
        option.dist = "loadscope"
        config.stash[GROUP_SCHEDULING] = True


def _local_popen(spec: str) -> bool:
    """Whether an execnet spec is a plain local subprocess: popen, no chdir, no proxy."""
    parts = _COUNT.sub("", spec, count=1).split("//")
    if parts[0] != "popen":
        return False
    return not any(part.split("=", 1)[0] in ("chdir", "via") for part in parts[1:])


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With `-n N`, `--dist loadscope` or `--dist loadgroup`, one work unit per group, host and
    trial: baseline then candidate together, on one worker.

    Different groups and trials spread over the workers. This replaces `--dist loadgroup`, whose
    node-id suffix has no effect on pytest 9.2's structured node ids.
    """
    if not config.stash.get(GROUP_SCHEDULING, False):
        return None
    if config.stash[SESSION_KEY].settings.adaptive:
        # Adaptive trials wait on earlier trials: work units must go out in collection order
        # (trial-major), never reordered by size (`--loadscope-reorder`, pytest-xdist 3.8.0).
        config.option.loadscopereorder = False
    return group_scheduling()(config, log)


@functools.cache
def group_scheduling() -> type:
    """xdist's loadscope with a group (on a host, in a trial) as its scope, handing a worker
    its next group only when it is on its last test (built on first use: xdist is optional)."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        # `_split_scope` is LoadScopeScheduling's documented override point for subclasses,
        # though private (checked against pytest-xdist 3.8.0, as LoadFileScheduling uses it).
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

        # Stock loadscope tops a worker up while it has two tests or fewer to go: with two
        # variants a group, that handed every worker two groups before its first had run, so
        # 16 groups on 8 workers were all placed up front, and a worker slowed by its hosts ran
        # its second group alone at the end. A worker gets its next group only when it is on
        # its last test (it needs one more queued to start that one: xdist runs a test once it
        # knows the next). Same attributes and shutdown rule as the stock `_reschedule`
        # (pytest-xdist 3.8.0).
        def _reschedule(self, node: Any) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    return GroupScheduling


def hand_to_worker(node: Any) -> None:
    """Controller: give a worker the result ids, pinned Git commits, ledger and checked binaries."""
    config = node.config
    if not enabled(config):
        return
    state: SkillEvalSession = config.stash[SESSION_KEY]
    services = state.services
    node.workerinput["skill_eval"] = {
        "results": {str(k): str(v) for k, v in services.result_dirs.items()},
        "pins": services.resolver.pinned(),
        "binaries": hosts.handover(),
        "ledger": services.ledger.handover() if services.ledger else None,
        # Resolved here, so a worker never re-resolves them against its own directory.
        "settings": state.settings.resolved_paths(),
    }


def take_from_controller(config: pytest.Config, state: SkillEvalSession) -> None:
    """Worker: adopt what the controller handed over instead of creating it again."""
    handed: dict[str, Any] = config.workerinput["skill_eval"]  # type: ignore[attr-defined]
    services = state.services
    services.result_dirs = {int(k): Path(v) for k, v in handed["results"].items()}
    services.resolver = SourceResolver(state.settings.root, pinned=handed["pins"])
    if handed.get("ledger"):
        services.ledger = ledger_from(handed["ledger"], state.settings.ledger_url)
    hosts.adopt(handed["binaries"])


def settle_worker(config: pytest.Config) -> None:
    """Worker: once collected, keep the garbage collector off what lives until the worker exits.

    A worker's modules, models and items outlive every collection it makes, and it exits with the
    session: frozen (`gc.freeze`), they are never traversed again, not by the collections made
    while subjects run, pytest's own at unconfigure, nor the one at interpreter exit, where all
    workers used to pay it at once. What is frozen stays until the worker exits, garbage among
    it too: one freeze, of what existed at that moment, so the cost is bounded.
    """
    if is_worker(config):
        gc.freeze()


def note_collected(node: Any, ids: list[str]) -> None:
    """Controller: remember what the workers will run, to record what they never got to."""
    config = node.config
    if not enabled(config) or SESSION_KEY not in config.stash:
        return
    state: SkillEvalSession = config.stash[SESSION_KEY]
    for nodeid in ids:
        parsed = parse_item_id(nodeid)
        if parsed is not None:
            group_id, variant, trial, host = parsed
            state.collected.setdefault((group_id, trial, host), set()).add(variant)
            state.collected_ids[nodeid] = (group_id, variant, trial, host)


def note_node_down(node: Any) -> None:
    """Controller: a worker a full results disk stopped has said so; the controller then leaves
    the results unfinished too, instead of failing to write them a second time."""
    config = node.config
    if not enabled(config) or SESSION_KEY not in config.stash:
        return
    output = getattr(node, "workeroutput", None) or {}  # set by xdist's worker (3.8.0)
    if output.get("shouldstop") == DISK_FULL_STOP:
        config.stash[SESSION_KEY].disk_full_reported = True


def send_to_controller(config: pytest.Config, report: TestReport) -> bool:
    """Worker: send a sub-report straight to the controller; False outside a worker.

    xdist's worker `pytest_runtest_logreport` insists a report belongs to the running item;
    sub-results have their own node ids (one JUnit row each), so they bypass it and send the
    same "testreport" event it would (fields checked against pytest-xdist 3.8.0).
    """
    interactor = _worker_interactor(config)
    if interactor is None:
        return False
    data = config.hook.pytest_report_to_serializable(config=config, report=report)
    data["item_index"] = interactor.item_index
    data["worker_id"] = interactor.workerid
    data["testrun_uid"] = interactor.testrunuid
    interactor.sendevent("testreport", data=data)
    return True


def _worker_interactor(config: pytest.Config) -> Any:
    # xdist registers its WorkerInteractor without a public name or accessor; it is found by
    # class name and duck-typed (checked against pytest-xdist 3.8.0).
    if not is_worker(config):
        return None
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor" and hasattr(plugin, "sendevent"):
            return plugin
    return None
