"""The inputs that determine a variant's run, each hashed under its own name.

One function decides what "the same run" means for every option that stands an earlier sealed
run in for a new one (`--skill-eval-reuse`, `--skill-eval-affected-since`): the group's
definition, its fixture, the variant's skills and context snapshots, the resolved Git commits,
the host and its pinned version, the model and provider mode, the script or cassette the
variant replays, and the runtime bundle. A run records them in `run.json` (`inputs`), so a
later invocation compares its own against what an earlier one ran from, name by name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..definitions import LoadedGroup
from ..evidence.layout import INPUT_NAMES
from ..evidence.store import sha256_file
from ..modelserver.scriptpaths import script_path
from ..workspace import ResourceError, SourceResolver, fingerprint, fingerprint_digest

# Fields of a group definition that are inputs under their own name.
_OWN_NAMES = ("model", "runtime")


@dataclass(frozen=True, slots=True)
class InputSources:
    """Where an invocation's inputs come from (the same for every group it runs)."""

    root: Path
    resolver: SourceResolver
    cassettes: Path | None
    record: str
    host_version: Callable[[str], str]  # host name → the version of its checked binary

    @property
    def provider_mode(self) -> str:
        """`live`, `record-once`/`record-all`, or `replay` (a script or a recording)."""
        if self.cassettes is None:
            return "live"
        return "replay" if self.record == "none" else f"record-{self.record}"


def _hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def resource_digest(path: Path) -> str:
    """A working-tree resource as a plan and a run's inputs pin it: its tree's fingerprint, or
    its bytes."""
    try:
        if path.is_dir() and not path.is_symlink():
            return fingerprint_digest(fingerprint(path))
        if path.is_file():
            return sha256_file(path)
    except (ResourceError, OSError) as error:
        return f"unreadable: {error}"
    return "missing"


def variant_inputs(
    sources: InputSources, loaded: LoadedGroup, variant: str, trial: int
) -> dict[str, str]:
    """Every input of `variant` of `loaded` (on its effective host) in trial `trial`, by name."""
    group = loaded.group
    runtime = group.effective_runtime
    environment = group.variants[variant]
    resolved = sources.resolver.resolve(
        environment.source.kind, getattr(environment.source, "ref", None)
    )

    def resources(paths: tuple[str, ...]) -> str:
        if resolved.commit is not None:  # what the commit holds at these paths (`commits`)
            return _hash({"git": list(paths)})
        return _hash({p: resource_digest(sources.root / p) for p in paths})

    script = (
        script_path(sources.cassettes, group.id, variant, trial, runtime.host)
        if sources.cassettes is not None and sources.record == "none"
        else None
    )
    bundles = [
        {"entry": b.entry, "resources": {r: resource_digest(sources.root / r) for r in b.resources}}
        for b in runtime.extensions
    ]
    return {
        # The model and runtime have their own names; the rest of the group is its definition.
        "definition": _hash({k: v for k, v in loaded.raw.items() if k not in _OWN_NAMES}),
        "fixture": _hash(
            None if group.fixture is None else resource_digest(sources.root / group.fixture)
        ),
        "skills": resources(tuple(environment.skills)),
        "context": resources(tuple(environment.context)),
        "commits": _hash({"kind": resolved.kind, "ref": resolved.ref, "commit": resolved.commit}),
        "host": runtime.host,
        "host-version": sources.host_version(runtime.host),
        "model": _hash(None if group.model is None else group.model.model_dump(mode="json")),
        "provider": sources.provider_mode,
        "script": "none" if script is None else "sha256:" + sha256_file(script),
        "runtime": _hash({"profile": runtime.model_dump(mode="json"), "bundles": bundles}),
    }


def changed_inputs(now: Mapping[str, str], then: Any) -> list[str]:
    """The names of the inputs that differ between `now` and an earlier run's record (every
    name when that run recorded none: a run from before inputs were recorded)."""
    if not isinstance(then, Mapping):
        return list(INPUT_NAMES)
    return [name for name in INPUT_NAMES if now.get(name) != then.get(name)]
