"""`--skill-eval-reuse RESULT`: a variant's run taken from an earlier sealed result.

A run is reused only when every input that determines it (`run.inputs`) hashes the same as the
run recorded there, that run completed, and the earlier result's seal verifies; otherwise the
variant runs. A reused run is copied (never linked) into the new result, its `run.json` marked
`reused` with the source result's id and seal root, and sealed with the rest of the new result.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..definitions import VARIANTS, LoadedGroup
from ..errors import SkillEvalError
from ..evidence import layout, read, shapes, verified
from ..evidence.iteration import REFUSED_COPY
from ..evidence.read import parse_evidence_json
from ..evidence.seal import sealed_root
from ..evidence.store import sha256_bytes
from .inputs import changed_inputs
from .reuse_copy import READ, ReuseError, copy_proved, sealed_entries

# Advisory files a result may gain after its seal (a review), never evidence.
_ADVISORY = (layout.SEMANTIC_GRADE, layout.REVIEW)


@dataclass(frozen=True, slots=True)
class Source:
    """An earlier result offered for reuse: its id, and its seal root or why it has none."""

    path: Path
    root: str | None
    problem: str | None

    @property
    def id(self) -> str:
        """The result id (its directory name)."""
        return self.path.name


@dataclass(frozen=True, slots=True)
class Found:
    """A run that may be reused: where it lies and what the new run.json says of it."""

    source: Source
    variant_dir: Path

    def marker(self, sha256: str, earlier: Any = None) -> dict[str, Any]:
        """`run.json`'s `reused`: the source result, its seal root, the run record's hash, and
        the run's `origin` (`<result>/<run>` where its subject ran, through any earlier reuse)."""
        run = (self.variant_dir / layout.RUN).relative_to(self.source.path).as_posix()
        origin = earlier.get("origin") if isinstance(earlier, Mapping) else None
        return {
            "result": self.source.id,
            "root": f"sha256:{self.source.root}",
            "run": run,
            "sha256": sha256,
            "origin": origin if isinstance(origin, str) else f"{self.source.id}/{run}",
        }


def open_source(path: Path) -> list[Source]:
    """The results `path` names (an aggregate names its trials), each verified against its seal."""
    trials = [path]
    if layout.aggregate_file(path).is_file():
        try:
            trials = read.aggregate_trial_dirs(path)
        except SkillEvalError as error:
            return [Source(path, None, str(error))]
    return [_verified(trial) for trial in trials]


def _verified(result: Path) -> Source:
    if not layout.seal_file(result).is_file():
        return Source(result, None, f"{result} has no {layout.SEAL}: it was never sealed")
    try:
        problems = verified.seal_problems(result, _ADVISORY)
    except (SkillEvalError, OSError) as error:
        problems = [str(error)]
    root = sealed_root(result)
    if problems or root is None:
        first = problems[0] if problems else f"{layout.seal_file(result)} is unreadable"
        return Source(result, None, f"its seal does not verify ({first})")
    return Source(result, root, None)


@dataclass(frozen=True, slots=True)
class Reuse:
    """The earlier results of `--skill-eval-reuse`, in the order given."""

    sources: tuple[Source, ...]

    def refused_sources(self) -> list[str]:
        """One line per source that can never be reused (its seal fails)."""
        return [
            f"nothing reused from {s.id}: {s.problem}"
            for s in self.sources
            if s.problem is not None
        ]

    def find(
        self, group_id: str, host: str, variant: str, trial: int, inputs: Mapping[str, str]
    ) -> Found | str:
        """The run trial `trial` of this variant reuses, or why none may be.

        Matching runs are taken in order (sources as given, each once), trial k the k-th, so
        that every process of an invocation picks the same and no run stands in twice.
        """
        matches: list[Found] = []
        reasons: list[str] = []
        for source in self.sources:
            if source.problem is not None:
                reasons.append(f"{source.id}: {source.problem}")
                continue
            variant_dir = layout.variant_dir(source.path, group_id, variant, host)
            try:
                found = read.read_run(variant_dir)
            except SkillEvalError as error:
                reasons.append(f"{source.id}: {error}")
                continue
            if found is None or found[0] != layout.RUN:
                reasons.append(f"{source.id}: no run of {group_id}[{variant}] on {host}")
            elif found[1].get("state") != "complete":
                reasons.append(f"{source.id}: its run there is {found[1].get('state')}")
            elif changed := changed_inputs(inputs, found[1].get("inputs")):
                reasons.append(f"{source.id}: changed since: {', '.join(changed)}")
            else:
                matches.append(Found(source, variant_dir))
        if len(matches) >= trial:
            return matches[trial - 1]
        if matches:
            reasons.append(f"trial {trial}: only {len(matches)} matching run(s) to reuse")
        return "not reused: " + "; ".join(reasons)


@dataclass
class VariantInputs:
    """One group run's variants: the inputs of each, and the run it reuses or why none."""

    inputs: dict[str, dict[str, str]] = field(default_factory=dict)
    chosen: dict[str, Found | str] = field(default_factory=dict)

    def decide(
        self,
        inputs: Callable[[LoadedGroup, str, int], dict[str, str]] | None,
        reuse: Reuse | None,
        loaded: LoadedGroup,
        host: str,
        trial: int,
    ) -> None:
        """Once per group run: each variant's inputs and, with reuse asked, its earlier run."""
        if inputs is None or self.inputs:
            return
        try:
            self.inputs = {v: inputs(loaded, v, trial) for v in VARIANTS}
        except (SkillEvalError, OSError):
            return  # an input that cannot be read: the run that reads it records why
        if reuse is not None:
            for variant in VARIANTS:
                found = reuse.find(loaded.group.id, host, variant, trial, self.inputs[variant])
                self.chosen[variant] = found

    def reuses(self, variant: str) -> bool:
        """Whether `variant` is to be copied from an earlier result rather than run."""
        return isinstance(self.chosen.get(variant), Found)

    def take(self, variant: str, group_dir: Path) -> tuple[Any, list[Any], str] | None:
        """The reused run copied into `group_dir`: (run, transcript, response); None: it runs."""
        found = self.chosen.get(variant)
        if not isinstance(found, Found):
            return None
        try:
            return copy_run(found, group_dir / variant, group_dir)
        except (SkillEvalError, OSError) as error:
            # Nothing of the copy is left (it was staged); the variant runs instead.
            self.chosen[variant] = f"{REFUSED_COPY} {found.variant_dir}: {error}"
            return None

    def note(self, variant: str, run: Any) -> None:
        """Record in a run's record the inputs it ran from and, when asked to reuse, why not."""
        if variant in self.inputs:
            run.setdefault("inputs", self.inputs[variant])
        refused = self.chosen.get(variant)
        if isinstance(refused, str) and "reused" not in run:
            run["notReused"] = refused


def copy_run(
    found: Found, variant_dir: Path, group_dir: Path
) -> tuple[dict[str, Any], list[Any], str]:
    """Copy a reused run's evidence into `variant_dir`; its run record, transcript and response.

    Every entry is proved, as it is copied or read, against the manifest the source's seal
    (the root it was verified under) covers, so a file changed after that seal was verified is
    never reused (`reuse_copy`). Paths the run recorded inside its own group now name the
    copy's, so grading reads the copy; `reused` says where it came from.
    """
    source = found.variant_dir
    if found.source.root is None:
        raise ReuseError(f"{found.source.id} has no verified seal")
    sealed = sealed_entries(found.source.path, found.source.root, source)

    def accept(read_bytes: dict[str, bytes]) -> tuple[dict[str, Any], list[Any], str]:
        return _records(found, group_dir, read_bytes)

    return copy_proved(source, variant_dir, sealed, accept)


def _records(
    found: Found, group_dir: Path, read_bytes: Mapping[str, bytes]
) -> tuple[dict[str, Any], list[Any], str]:
    """The reused run's record (its paths moved to the copy's, `reused` added), transcript and
    response, from the proved bytes of its files."""
    source = found.variant_dir
    missing = [name for name in READ if name not in read_bytes]
    if missing:
        raise ReuseError(f"{source / missing[0]} is missing; there is no run to reuse")
    run = parse_evidence_json(source / layout.RUN, read_bytes[layout.RUN], shapes.RUN)
    transcript = parse_evidence_json(source / layout.TRANSCRIPT, read_bytes[layout.TRANSCRIPT])
    response = read_bytes[layout.FINAL].decode("utf-8").removesuffix("\n")
    if not isinstance(run, dict) or not isinstance(transcript, list):
        raise ReuseError(f"{source} holds no run record and transcript to reuse")
    pairs = {str(source.parent): str(group_dir)}
    pairs[str(source.parent.resolve())] = str(group_dir.resolve())
    recorded = Path(str(run.get("workspace") or ""))
    if recorded.parts[-2:] == (source.name, "workspace"):
        # Where the run was made, when its result has moved since (copied, merged).
        pairs.setdefault(str(recorded.parent.parent), str(group_dir.resolve()))
    moved = _moved(run, sorted(pairs.items(), key=lambda p: -len(p[0])))
    moved["reused"] = found.marker(sha256_bytes(read_bytes[layout.RUN]), run.get("reused"))
    return moved, transcript, response


def _moved(value: Any, pairs: Sequence[tuple[str, str]]) -> Any:
    """`value` with every string that begins with an old group directory beginning with the new."""
    if isinstance(value, str):
        for old, new in pairs:
            if value == old or value.startswith(old + os.sep):
                return new + value[len(old) :]
        return value
    if isinstance(value, list):
        return [_moved(item, pairs) for item in value]
    if isinstance(value, dict):
        return {key: _moved(item, pairs) for key, item in value.items()}
    return value
