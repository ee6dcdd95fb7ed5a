"""A process's services: sources, binaries, endpoints, the ledger, result directories, and the
one cache of loaded definitions; a group run's `Environment` is built from them."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..budget.ledger import Ledger
from ..budget.ledger_choice import open_ledger
from ..definitions import DefinitionError, LoadedDefinition, LoadedGroup, load_definition
from ..evidence import create_result_dir
from ..hosts import checked_binary
from ..hosts.base import Executable
from ..hosts.process import CancelToken
from ..hosts.registry import registered
from ..run.environment import Environment
from ..run.loop import Loop
from ..run.providers import EndpointFactory
from ..scale.plan import Plan
from ..workspace import SourceResolver
from .keywords import keyword_groups

if TYPE_CHECKING:
    from ..options.settings import Settings


class Services:
    """What every group run of this process shares, checked or opened once."""

    def __init__(
        self,
        settings: Settings,
        loop: Loop,
        plan: Plan | None,
        *,
        keyword: str,
        rootpath: Path,
        workers: int,
    ) -> None:
        self.settings = settings
        self.loop = loop  # `--skill-eval-reuse`, `--skill-eval-affected-since`
        self.plan = plan  # a planned run (beyond one machine): its pins are the sources'
        self.cancel = CancelToken()
        self.workers = workers  # the run's evaluator processes (xdist's workers; 1 when serial)
        self.resolver = SourceResolver(
            settings.root, pinned=plan.model.pins if plan is not None else None
        )
        self.result_dirs: dict[int, Path] = {}
        self.shard_dir: Path | None = None  # a shard of a planned run: its directory
        self.ledger: Ledger | None = None
        self._binary_lock = threading.Lock()
        # Every definition file is loaded once per process (path → what loading it gave).
        self._definitions: dict[Path, LoadedDefinition | DefinitionError] = {}
        self.loaded_groups: dict[str, LoadedGroup] = {}  # the controller's, by group id
        # `-k` and the rootdir its parents' names are relative to.
        self.keyword = keyword
        self.rootpath = rootpath
        self.endpoints = EndpointFactory(
            cassettes=settings.cassettes,
            record=settings.record,
            auth=settings.pi_auth,
            models=settings.pi_models,
            upstream_url=settings.upstream_url,
            binaries=self.binary,
        )

    def binary(self, host: str) -> Executable:
        """The checked binary of `host` (checked once per process, or handed over)."""
        with self._binary_lock:
            return checked_binary(host, self.settings.host_options(host), self.settings.root)

    def definition(self, path: Path) -> LoadedDefinition:
        """The definition at `path`, loaded on first use; a DefinitionError raises each time."""
        key = path.resolve()
        if key not in self._definitions:
            try:
                self._definitions[key] = load_definition(path, self.settings.root, registered())
            except DefinitionError as error:
                self._definitions[key] = error
        found = self._definitions[key]
        if isinstance(found, DefinitionError):
            raise found
        return found

    def hosts_in_use(self) -> set[str]:
        """The hosts the groups run on (their binaries are checked up front, and only theirs:
        a run on Codex neither needs Pi installed nor pays for `pi --version`)."""
        if self.settings.hosts:
            return set(self.settings.hosts)
        hosts: set[str] = set()
        for path in self.settings.paths:
            try:
                loaded = self.definition(path)
            except DefinitionError:
                continue
            hosts.update(group.group.effective_runtime.host for group in loaded.groups)
        return hosts

    def keyword_selected(self, definitions: list[LoadedDefinition]) -> list[LoadedDefinition]:
        """`definitions` with only the groups `-k` (`self.keyword`) leaves an item of."""
        ids = keyword_groups(
            self.keyword, self.rootpath, definitions, self.hosts_for, self.settings.trials
        )
        if ids is None:
            return definitions
        return [
            dataclasses.replace(d, groups=tuple(g for g in d.groups if g.group.id in ids))
            for d in definitions
        ]

    def loaded_selected(self) -> list[LoadedGroup]:
        """The loaded groups `-k` leaves an item of (every one without `-k`)."""
        loaded = [d for d in self._definitions.values() if isinstance(d, LoadedDefinition)]
        ids = {g.group.id for d in self.keyword_selected(loaded) for g in d.groups}
        return [g for g in self.loaded_groups.values() if g.group.id in ids]

    def hosts_for(self, loaded: LoadedGroup) -> tuple[str, ...]:
        """The hosts a group runs on: the invocation's choice, else its declared host."""
        return self.settings.hosts or (loaded.group.effective_runtime.host,)

    def result_dir(self, trial: int) -> Path:
        """The result directory of a trial (created by the controller)."""
        if trial not in self.result_dirs:
            _, path = create_result_dir(self.settings.results_dir)
            self.result_dirs[trial] = path
        return self.result_dirs[trial]

    def open_ledger(self) -> None:
        """Redis at the ledger URL (keyed by the plan, else the invocation), else a file ledger."""
        key = self.plan.id if self.plan is not None else self.result_dir(1).name
        s = self.settings
        self.ledger = open_ledger(s.ledger_url, s.max_cost, key, s.reserve, s.results_dir)

    def environment(self) -> Environment:
        """What a group needs to run its subjects in this process."""
        settings = self.settings
        return Environment(
            root=settings.root,
            resolver=self.resolver,
            cancel=self.cancel,
            binary=self.binary,
            endpoint=self.endpoints.endpoint,
            no_progress_s=settings.no_progress_s,
            ledger=self.ledger,
            **self.loop.environment(settings, self.resolver, lambda h: self.binary(h).version),
            retries=settings.retries,
            workers=self.workers,
        )
