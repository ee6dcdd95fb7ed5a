"""The skill author's loop: `--skill-eval-reuse` and `--skill-eval-affected-since`.

Options are registered and read here (the pytest glue passes its parser and config through),
and the services a group run needs are built once per process: the invocation's input
sources (`run/inputs.py`) and the earlier sealed results runs may be copied from.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SkillEvalError
from .evidence import layout, locate
from .run.inputs import InputSources, variant_inputs
from .run.reuse import Reuse, Source, open_source
from .workspace import SourceResolver

REUSE = "--skill-eval-reuse"
AFFECTED_SINCE = "--skill-eval-affected-since"


class ResultOptionError(SkillEvalError):
    """An option names an earlier result that cannot be found."""


def add_options(group: Any) -> None:
    """Register the options of the loop (on the plugin's option group)."""
    group.addoption(
        REUSE,
        action="append",
        default=[],
        metavar="RESULT",
        help="copy each variant's run from this earlier sealed result (an id, a directory, or "
        "latest; an aggregate gives its trials) when every input that determines it hashes "
        "the same and its seal verifies; otherwise the variant runs. Repeatable",
    )
    group.addoption(
        AFFECTED_SINCE,
        metavar="RESULT",
        default=None,
        help="run only the groups whose inputs differ from this earlier sealed result (an id, "
        "a directory, or latest); the rest are reported unchanged with their earlier grades",
    )


def resolve(option: str, target: str, results_dir: Path, start: Path) -> Path:
    """The result directory `target` names: a path, an id under a results directory, `latest`."""
    if "/" in target or "\\" in target or target.startswith("."):
        path = Path(target) if Path(target).is_absolute() else start / target
        candidates = [path]
    else:
        found = [results_dir, *[d for d in locate.results_dirs(start) if d != results_dir]]
        found = [d for d in found if d.is_dir()]
        if target == locate.LATEST:
            newest = locate.newest(found)
            if newest is not None:
                return newest.resolve()
            raise ResultOptionError(
                f"{option} latest: no finished result in {results_dir}; run pytest --skill-eval "
                "once without it first"
            )
        candidates = [d / target for d in found]
    for candidate in candidates:
        if (candidate / layout.INVOCATION).is_file() or layout.aggregate_file(candidate).is_file():
            return candidate.resolve()
    raise ResultOptionError(
        f"{option} {target}: no such result (looked in "
        f"{', '.join(str(c) for c in candidates) or results_dir}); pass a result id a run "
        "printed, latest, or a result directory"
    )


@dataclass
class Loop:
    """What this invocation reuses and since when it selects; built once per process."""

    reuse: Reuse | None
    affected_since: Path | None
    sources: InputSources | None = None

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
        return cls(reuse, affected)

    def environment(
        self, settings: Any, resolver: SourceResolver, host_version: Callable[[str], str]
    ) -> dict[str, Any]:
        """A group run's `inputs` and `reuse` (`run.Environment`), from the session's services."""
        if self.sources is None:
            self.sources = InputSources(
                settings.root, resolver, settings.cassettes, settings.record, host_version
            )
        return {"inputs": functools.partial(variant_inputs, self.sources), "reuse": self.reuse}

    def refused_lines(self) -> list[str]:
        """Earlier results given for reuse that can never be reused, one line each."""
        return [] if self.reuse is None else self.reuse.refused_sources()
