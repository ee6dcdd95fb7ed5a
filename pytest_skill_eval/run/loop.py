"""The skill author's loop: `--skill-eval-reuse` and `--skill-eval-affected-since`.

Options are registered and read here (the pytest glue passes its parser and config through),
and the services a group run needs are built once per process: the invocation's input
sources (`run/inputs.py`) and the earlier sealed results runs may be copied from.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..definitions import VARIANTS, LoadedGroup
from ..errors import SkillEvalError
from ..evidence import iteration, layout, locate, read
from ..evidence.seal import planned_groups, sealed_root
from ..evidence.store import sha256_file
from ..workspace import SourceResolver
from .inputs import InputSources, changed_inputs, variant_inputs
from .reuse import Reuse, Source, open_source

# Declared by the loop feature (`features/loop.py`), read here.
REUSE = "--skill-eval-reuse"
AFFECTED_SINCE = "--skill-eval-affected-since"


def _reference(result: Path, group_dir: Path) -> dict[str, Any]:
    """An unchanged group as the earlier result holds it: by its seal and its manifest's hash."""
    record: Mapping[str, Any] = read.group_record(group_dir) or {}
    manifest = group_dir / layout.MANIFEST
    return {
        "group": record.get("id"),
        "host": layout.record_host(record),
        "result": result.name,
        "root": f"sha256:{sealed_root(result)}",
        "manifest": f"sha256:{sha256_file(manifest)}" if manifest.is_file() else None,
        "grade": record.get("grade"),
        "evidence": str(group_dir),
    }


class ResultOptionError(SkillEvalError):
    """An option names an earlier result that cannot be found."""


# What to do when `latest` or `previous` names no result.
_NONE_NAMED = {
    locate.LATEST: "no finished result in {}; run pytest --skill-eval once without it first",
    locate.PREVIOUS: "fewer than two finished results in {}; pass latest or a result id",
}


def resolve(option: str, target: str, results_dir: Path, start: Path) -> Path:
    """The result `target` names (`locate.find_result`); `ResultOptionError` when none."""
    found = locate.find_result(target, results_dir, start, accept=_is_result)
    if isinstance(found, Path):
        return found
    if found.named:
        raise ResultOptionError(f"{option} {target}: {_NONE_NAMED[target].format(results_dir)}")
    raise ResultOptionError(
        f"{option} {target}: no such result (looked in "
        f"{', '.join(str(c) for c in found.places)}); pass a result id a run "
        "printed, latest, or a result directory"
    )


def _is_result(candidate: Path) -> bool:
    """A run's result (`locate.is_result`, the one rule) or an aggregate of trials."""
    return locate.is_result(candidate) or layout.aggregate_file(candidate).is_file()


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether a group (on a host) is affected since the earlier result, and why."""

    group: str
    host: str
    changed: tuple[str, ...]  # `<variant>: <input>, …`, one per variant that changed
    reference: dict[str, Any] | None  # the earlier group, by seal, when unchanged

    @property
    def affected(self) -> bool:
        """Whether the group runs (some input of a variant differs from the earlier run)."""
        return bool(self.changed)

    def line(self) -> str:
        """One line for the collection report."""
        name = layout.group_dir_name(self.group, self.host)
        if self.affected:
            return f"  {name}: affected ({'; '.join(self.changed)})"
        ref = self.reference or {}
        return f"  {name}: unchanged (grade {ref.get('grade')} in {ref.get('result')})"


Inputs = Callable[[LoadedGroup, str, int], dict[str, str]]


@dataclass
class Loop:
    """What this invocation reuses and since when it selects; built once per process."""

    reuse: Reuse | None
    affected_since: Path | None
    sources: InputSources | None = None
    decisions: dict[tuple[str, str], Decision] = field(default_factory=dict)
    _checked: dict[Path, bool] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Any, results_dir: Path) -> Loop:
        """Read the options; a result that cannot be found is a `ResultOptionError`."""
        start = Path(config.invocation_params.dir)
        given = [resolve(REUSE, t, results_dir, start) for t in config.getoption(REUSE) or []]
        reuse = None
        if given:
            sources: list[Source] = []
            for path in dict.fromkeys(given):
                sources.extend(open_source(path))
            reuse = Reuse(tuple(sources))
        since = config.getoption(AFFECTED_SINCE)
        affected = resolve(AFFECTED_SINCE, since, results_dir, start) if since else None
        if affected is not None:
            # An aggregate stands for its trials: decided against trial 1, each must verify.
            trials = open_source(affected) or [Source(affected, None, "it lists no trials")]
            for source in trials:
                if source.problem is not None:
                    raise ResultOptionError(
                        f"{AFFECTED_SINCE} {since}: {source.id}: {source.problem}; pass a sealed "
                        "result that verifies (skill-eval verify)"
                    )
            affected = trials[0].path
        return cls(reuse, affected)

    def decide(self, loaded: LoadedGroup, host: str, inputs: Inputs) -> Decision | None:
        """Whether `loaded` on `host` is affected since `--skill-eval-affected-since` (None:
        the option was not given); decided once, from both variants' inputs in trial 1."""
        since = self.affected_since
        if since is None:
            return None
        key = (loaded.group.id, host)
        if key not in self.decisions:
            moved = replace(loaded, group=loaded.group.on_host(host))
            since = self._holder(since, loaded.group.id, host)
            group_dir = layout.group_dir(since, loaded.group.id, host)
            changed = []
            for variant in VARIANTS:
                try:
                    found = read.read_run(group_dir / variant)
                    now = inputs(moved, variant, 1)
                except (SkillEvalError, OSError) as error:
                    changed.append(f"{variant}: unreadable ({error})")
                    continue
                then = found[1] if found is not None else None
                if then is None or then.get("state") != "complete" or "inputs" not in then:
                    state = then.get("state") if then is not None else "not run"
                    changed.append(f"{variant}: {state} in {since.name}")
                elif names := changed_inputs(now, then["inputs"]):
                    changed.append(f"{variant}: {', '.join(names)}")
            reference = None if changed else _reference(since, group_dir)
            self.decisions[key] = Decision(loaded.group.id, host, tuple(changed), reference)
        return self.decisions[key]

    def unchanged(self, loaded: LoadedGroup, host: str, inputs: Inputs) -> bool:
        """`--skill-eval-affected-since`: whether this group on `host` is not to run."""
        decided = self.decide(loaded, host, inputs)
        return decided is not None and not decided.affected

    def _holder(self, result: Path, group: str, host: str) -> Path:
        """The result that holds `group` on `host`: `result`, or the earlier sealed result it
        names for a group it left unrun (itself run with `--skill-eval-affected-since`), so a
        loop of affected-only runs keeps comparing with the run each group last made. A
        reference is followed only when that result's seal verifies and still has the root
        and the group manifest the reference names; otherwise the group counts as not run."""
        seen: set[Path] = set()
        while not layout.group_dir(result, group, host).is_dir() and result not in seen:
            seen.add(result)
            invocation = read.load_invocation(result) if result.is_dir() else None
            found = [
                ref
                for ref in iteration.unchanged_groups(invocation)
                if ref.get("group") == group and layout.record_host(ref) == host
            ]
            earlier_id = found[0].get("result") if found else None
            if not isinstance(earlier_id, str) or not layout.is_safe_id(earlier_id):
                break
            earlier = result.parent / earlier_id
            held = layout.group_dir(earlier, group, host)
            if not held.is_dir() or not self._verifies(earlier):
                break
            now = _reference(earlier, held)
            if any(now[key] != found[0].get(key) for key in ("root", "manifest")):
                break
            result = earlier
        return result

    def _verifies(self, result: Path) -> bool:
        """Whether `result`'s seal verifies (each result checked once per process)."""
        if result not in self._checked:
            self._checked[result] = all(s.problem is None for s in open_source(result))
        return self._checked[result]

    def nothing_affected(self) -> bool:
        """`--skill-eval-affected-since` decided every group it saw unchanged: a run left with
        nothing to do passes (pytest's "no tests ran" would fail a pull request's job)."""
        decided = self.decisions.values()
        return (
            self.affected_since is not None
            and any(decided)
            and not any(d.affected for d in decided)
        )

    def record(
        self,
        invocation: Any,
        groups: Iterable[LoadedGroup],
        hosts_for: Callable[[LoadedGroup], tuple[str, ...]],
        inputs: Inputs | None,
    ) -> None:
        """`invocation.json`: the earlier result and the planned groups unchanged since it,
        each by that result's seal (references, not copies of its conclusions)."""
        if self.affected_since is None or inputs is None:
            return
        planned = set(planned_groups(invocation))
        decided = [
            self.decide(loaded, host, inputs)
            for loaded in groups
            if loaded.group.id in planned
            for host in hosts_for(loaded)
        ]
        invocation["affectedSince"] = {
            "result": self.affected_since.name,
            "root": f"sha256:{sealed_root(self.affected_since)}",
            "unchanged": [d.reference for d in decided if d is not None and not d.affected],
        }

    def report_lines(self) -> list[str]:
        """Which groups are affected since the earlier result and why, which are not."""
        if self.affected_since is None:
            return []
        root = sealed_root(self.affected_since)
        head = f"skill-eval: affected since {self.affected_since.name} (seal sha256:{root}):"
        return [head, *(d.line() for d in self.decisions.values())]

    def environment(
        self, settings: Any, resolver: SourceResolver, host_version: Callable[[str], str]
    ) -> dict[str, Any]:
        """A group run's `inputs` and `reuse` (`run.Environment`), from the session's services."""
        if self.sources is None:
            self.sources = InputSources(
                settings.root, resolver, settings.cassettes, settings.record, host_version
            )
        return {"inputs": functools.partial(variant_inputs, self.sources), "reuse": self.reuse}

    def unchanged_lines(self) -> list[str]:
        """The terminal summary's lines for the groups that did not run: their earlier grades."""
        return [
            f"group {layout.group_dir_name(d.group, d.host)} [unchanged] grade="
            f"{(d.reference or {}).get('grade')}: {(d.reference or {}).get('evidence')}"
            for d in self.decisions.values()
            if not d.affected
        ]

    def refused_lines(self) -> list[str]:
        """Earlier results given for reuse that can never be reused, one line each."""
        return [] if self.reuse is None else self.reuse.refused_sources()
